// The rest notices between the instances of a cluster (src/store/engine/postgres/rests.ts): what one
// sends reaches the others, never itself, and a notice PostgreSQL would refuse is reported, not thrown.
import { afterAll, beforeAll, describe, expect, it, setDefaultTimeout } from "bun:test";
import { SQL } from "bun";
import { NOTIFY_LIMIT_BYTES, RESTS_CHANNEL, shareRests, type RestFeed, type RestNotice } from "../../src/store/engine/postgres/rests.ts";
import { startPostgres, type TestPostgres } from "../support/postgres.ts";

setDefaultTimeout(60_000);

let pg: TestPostgres;
let sqlA: SQL;
let sqlB: SQL;
let a: RestFeed;
let b: RestFeed;
const heardBy: Record<"a" | "b", RestNotice[]> = { a: [], b: [] };
const failures: { notice: RestNotice; cause: unknown }[] = [];
const HASH = "ab".repeat(32);

beforeAll(async () => {
  pg = await startPostgres();
  const url = await pg.createDatabase("rests_feed");
  [sqlA, sqlB] = [new SQL(url), new SQL(url)];
  const failed = (notice: RestNotice, cause: unknown) => failures.push({ notice, cause });
  a = await shareRests(sqlA, "inst-a", (n) => heardBy.a.push(n), failed);
  b = await shareRests(sqlB, "inst-b", (n) => heardBy.b.push(n), failed);
});

afterAll(async () => {
  await a?.stop();
  await b?.stop();
  await sqlA?.close();
  await sqlB?.close();
  await pg?.stop();
});

/** Waits until `ok()` or a second has passed, then a little more for what should not come. */
async function settle(ok: () => boolean): Promise<void> {
  const deadline = Date.now() + 1000;
  while (!ok() && Date.now() < deadline) await Bun.sleep(10);
  await Bun.sleep(100);
}

describe("rest notices on PostgreSQL", () => {
  it("reach the other instance with the provider, the key's hash and the time left, and not the sender", async () => {
    heardBy.a = [];
    heardBy.b = [];
    a.announce({ provider: "anthropic", keyHash: HASH, ms: 29_999.2 });
    await settle(() => heardBy.b.length > 0);
    expect(heardBy.b).toEqual([{ provider: "anthropic", keyHash: HASH, ms: 30_000 }]);
    expect(heardBy.a).toEqual([]);
  });

  it("ignore what another sender puts on the channel that is no rest notice", async () => {
    heardBy.b = [];
    for (const junk of ["not json", '{"i":"x","p":"q","k":"sk-ant-secret","ms":5}', `{"i":"x","p":"q","k":"${HASH}","ms":-1}`]) {
      await sqlA`SELECT pg_notify(${RESTS_CHANNEL}, ${junk})`;
    }
    a.announce({ provider: "marker", keyHash: HASH, ms: 1000 });
    await settle(() => heardBy.b.length > 0);
    expect(heardBy.b.map((n) => n.provider)).toEqual(["marker"]);
  });

  it(`report a notice of ${NOTIFY_LIMIT_BYTES} bytes or more instead of sending or throwing it`, async () => {
    heardBy.b = [];
    const provider = "p".repeat(NOTIFY_LIMIT_BYTES);
    expect(() => a.announce({ provider, keyHash: HASH, ms: 1000 })).not.toThrow();
    await settle(() => false);
    expect(heardBy.b).toEqual([]);
    expect(failures.map((f) => f.notice.provider)).toEqual([provider]);
    expect(String(failures[0]!.cause)).toContain("provider id too long");
  });
});
