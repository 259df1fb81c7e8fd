import type { Account } from "./types.ts";

/** What a view is given: the logged-in account (null on the login pages), the hash's query, navigation. */
export interface Ctx {
  me: Account | null;
  params: URLSearchParams;
  /** Opens another view: `go("keys")`. */
  go(route: string): void;
  /** Renders the current view again (after a change), with the account read anew. */
  reload(): void;
  /** The account was changed or logged in: the shell shows it. */
  signedIn(me: Account): void;
}

export type View = (ctx: Ctx) => Promise<HTMLElement>;

/** The logged-in account of a view that needs one (the router gives those views no null). */
export const account = (ctx: Ctx): Account => ctx.me!;
