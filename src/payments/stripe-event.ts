import { NUL } from "../core/nul.ts";
import { isObject } from "../dialects/fields.ts";

// What the gateway reads of a webhook's event, once its signature checks out. A signed body is
// still checked field by field: the webhook secret may leak, or Stripe's shapes change, and a
// missing `data` or an amount that is a string must be a plain refusal (docs/dashboard.md#top-ups),
// not a TypeError answered 500 or a comparison that happens to fail.

/** What the gateway reads of a Checkout Session in a webhook's event. */
export interface PaidSession {
  id: string;
  paymentStatus: string;
  amountTotal: number | null;
  currency: string | null;
  /** The payment's id: the PaymentIntent, else the session's own id (a session with no PaymentIntent). */
  paymentRef: string;
}

export interface VerifiedEvent {
  id: string;
  type: string;
  /** The event's Checkout Session, or null when its object is something else. */
  session: PaidSession | null;
}

/** A signed event that is not the shape Stripe sends; `reason` names the field, never its value. */
export class MalformedEvent extends Error {
  constructor(
    readonly reason: string,
    /** The event's id when it has a readable one, for the operator's log line. */
    readonly eventId: string | null,
  ) {
    super(reason);
  }
}

type Fields = Record<string, unknown>;

/**
 * A text the gateway looks up, stores or compares: no Stripe id or field holds U+0000, and
 * PostgreSQL's text cannot hold it (a lookup or an insert of it fails), so such an event is refused
 * on both engines before it reaches the database. Texts the gateway never reads (metadata, the
 * customer's email) are not checked: they cannot stop a credit.
 */
function checkNul(fields: Record<string, unknown>, bad: (reason: string) => MalformedEvent): void {
  for (const [name, v] of Object.entries(fields)) {
    if (typeof v === "string" && v.includes(NUL)) throw bad(`${name} holds U+0000 (the NUL character), which no Stripe field holds`);
  }
}

const isText = (v: unknown): v is string => typeof v === "string" && v.length > 0;

/** The parsed body of a signed delivery as the event the gateway acts on, or MalformedEvent. */
export function readEvent(body: unknown): VerifiedEvent {
  if (!isObject(body)) throw new MalformedEvent("the body is not a JSON object", null);
  const eventId = isText(body.id) ? body.id : null;
  const bad = (reason: string) => new MalformedEvent(reason, eventId);
  if (eventId === null) throw bad("id must be a non-empty string");
  if (!isText(body.type)) throw bad("type must be a non-empty string");
  checkNul({ id: body.id, type: body.type }, bad);
  if (!isObject(body.data)) throw bad("data must be an object");
  const object = body.data.object;
  if (!isObject(object)) throw bad("data.object must be an object");
  // A checkout.session.* event always carries a session; another type's object is not read at all.
  const checkoutEvent = body.type.startsWith("checkout.session.");
  if (!checkoutEvent && object.object !== "checkout.session") return { id: eventId, type: body.type, session: null };
  if (object.object !== "checkout.session") throw bad(`data.object.object must be "checkout.session" on a ${body.type} event`);
  return { id: eventId, type: body.type, session: sessionOf(object, bad) };
}

function sessionOf(s: Fields, bad: (reason: string) => MalformedEvent): PaidSession {
  if (!isText(s.id)) throw bad("data.object.id must be a non-empty string");
  if (typeof s.payment_status !== "string") throw bad("data.object.payment_status must be a string");
  if (s.amount_total !== null && !Number.isSafeInteger(s.amount_total)) throw bad("data.object.amount_total must be a whole number of cents or null");
  if (s.currency !== null && typeof s.currency !== "string") throw bad("data.object.currency must be a string or null");
  const intent = s.payment_intent;
  let intentId: string | null;
  if (intent === null || intent === undefined) intentId = null;
  else if (isText(intent)) intentId = intent;
  else if (isObject(intent) && isText(intent.id)) intentId = intent.id;
  else throw bad("data.object.payment_intent must be an id, an object with an id, or null");
  checkNul({ "data.object.id": s.id, "data.object.payment_status": s.payment_status, "data.object.currency": s.currency, "data.object.payment_intent": intentId }, bad);
  return { id: s.id, paymentStatus: s.payment_status, amountTotal: s.amount_total as number | null, currency: s.currency, paymentRef: intentId ?? s.id };
}
