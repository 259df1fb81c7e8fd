/** A value now (SQLite, on the hot path) or later (PostgreSQL, over the network): what a table owner's interface returns. */
export type Awaitable<T> = T | Promise<T>;
