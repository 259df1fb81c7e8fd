import type { AccountView } from "../../http/api-schemas.ts";

/** What a view is given: the logged-in account (null on the login pages), the hash's query, navigation. */
export interface Ctx {
  me: AccountView | null;
  params: URLSearchParams;
  /** Opens another view: `go("keys")`. */
  go(route: string): void;
  /** Renders the current view again (after a change), with the account read anew. */
  reload(): void;
  /** The account was changed or logged in: the shell shows it. */
  signedIn(me: AccountView): void;
}

export type View = (ctx: Ctx) => Promise<HTMLElement>;

/** The logged-in account of a view that needs one (the router gives those views no null). */
export const account = (ctx: Ctx): AccountView => ctx.me!;
