import { afterAll, beforeAll, expect, it, setDefaultTimeout } from "bun:test";
import { hashPassword } from "../../src/auth/passwords.ts";
import { codeAt, enrolled, loginFirstStep, type Enrolled } from "../support/two-factor.ts";
import { noticeGateway, type NoticeRig } from "./support.ts";

// Under [email], a recovery code used (docs/dashboard.md#two-factor-login) is mailed to the holder,
// in case it was not them: whoever used it had the password too.

setDefaultTimeout(30_000);

let rig: NoticeRig;
beforeAll(async () => {
  rig = await noticeGateway();
});
afterAll(() => rig.stop());

let n = 0;
/** An account the operator made (its address needs no verification), logged in, with two-factor login on. */
async function holder(): Promise<Enrolled> {
  const email = `rc${process.pid}-${++n}@test.local`;
  const acc = await rig.gw.services.accounts.create(email, { passwordHash: await hashPassword("correct horse") });
  const b = rig.browser();
  expect((await b.call("POST", "/api/login", { email, password: "correct horse" })).status).toBe(200);
  return enrolled(rig.gw, { b, id: acc.id, email });
}

const noticesTo = (email: string) => rig.smtp.mails.filter((m) => m.to.includes(email) && /recovery code/i.test(m.data));

it("a recovery code that opens a login is mailed to the holder, with how many remain", async () => {
  const h = await holder();
  const { b, token } = await loginFirstStep(rig.gw, h, rig.browser());
  expect((await b.call("POST", "/api/login/second-factor", { token, code: h.recovery[0] })).status).toBe(200);
  await rig.gw.services.notices.drain(5_000);
  const mails = noticesTo(h.email);
  expect(mails).toHaveLength(1);
  expect(mails[0]!.text).toContain("9 unused codes remain");
});

it("a login with the app's code mails nothing", async () => {
  const h = await holder();
  const { b, token } = await loginFirstStep(rig.gw, h, rig.browser());
  expect((await b.call("POST", "/api/login/second-factor", { token, code: await codeAt(h.secret, 30) })).status).toBe(200);
  await rig.gw.services.notices.drain(5_000);
  expect(noticesTo(h.email)).toHaveLength(0);
});
