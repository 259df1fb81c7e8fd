/** A value now (SQLite, on the hot path) or later (PostgreSQL, over the network). */
export type Awaitable<T> = T | Promise<T>;
