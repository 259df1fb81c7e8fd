import { afterAll, beforeAll, describe, expect, it } from "bun:test";
import { clientAddress, ipAllowed, parseCidr, parseCidrList, throttleAddress } from "../../src/core/ip.ts";
import { startTestGateway, type TestGateway } from "../support/gateway.ts";
import { getWithKey } from "../support/keyed.ts";
import { errorOf } from "../support/errors.ts";

const allows = (cidrs: string[], ip: string) => ipAllowed(parseCidrList(cidrs), ip);

describe("CIDR allow-lists", () => {
  it("match IPv4 addresses inside a prefix and refuse those outside", () => {
    expect(allows(["10.0.0.0/8"], "10.255.1.2")).toBe(true);
    expect(allows(["10.0.0.0/8"], "11.0.0.1")).toBe(false);
    expect(allows(["192.168.1.0/24"], "192.168.1.77")).toBe(true);
    expect(allows(["192.168.1.0/24"], "192.168.2.1")).toBe(false);
  });

  it("treat an address without a prefix as a single host", () => {
    expect(allows(["203.0.113.7"], "203.0.113.7")).toBe(true);
    expect(allows(["203.0.113.7"], "203.0.113.8")).toBe(false);
    expect(allows(["2001:db8::7"], "2001:db8::7")).toBe(true);
  });

  it("match IPv6 addresses, including compressed and full forms", () => {
    expect(allows(["2001:db8::/32"], "2001:db8:1234::1")).toBe(true);
    expect(allows(["2001:db8::/32"], "2001:0db8:0000:0000:0000:0000:0000:0001")).toBe(true);
    expect(allows(["2001:db8::/32"], "2001:db9::1")).toBe(false);
    expect(allows(["fd00::/8"], "fd12:3456::1")).toBe(true);
    expect(allows(["::1/128"], "::1")).toBe(true);
  });

  it("never match an IPv4 address against an IPv6 prefix or the reverse", () => {
    expect(allows(["::/0"], "10.0.0.1")).toBe(false);
    expect(allows(["0.0.0.0/0"], "2001:db8::1")).toBe(false);
  });

  it("read an IPv4 client seen through a dual-stack socket (::ffff:a.b.c.d) as IPv4", () => {
    expect(allows(["127.0.0.0/8"], "::ffff:127.0.0.1")).toBe(true);
    expect(allows(["10.0.0.0/8"], "::ffff:127.0.0.1")).toBe(false);
  });

  it("read an IPv4-mapped IPv6 entry as the IPv4 range it maps", () => {
    expect(allows(["::ffff:10.0.0.0/104"], "10.1.2.3")).toBe(true);
    expect(allows(["::ffff:10.0.0.0/104"], "::ffff:10.1.2.3")).toBe(true);
    expect(allows(["::ffff:10.0.0.0/104"], "11.0.0.1")).toBe(false);
    expect(allows(["::ffff:203.0.113.7"], "203.0.113.7")).toBe(true);
    expect(allows(["::ffff:cb00:7107/128"], "203.0.113.7")).toBe(true);
    expect(allows(["::ffff:0:0/96"], "192.0.2.1")).toBe(true);
  });

  it("trust a proxy whose entry is written IPv4-mapped", () => {
    expect(clientAddress("10.0.0.5", "198.51.100.9", parseCidrList(["::ffff:10.0.0.0/104"]))).toBe("198.51.100.9");
  });

  it("refuse a client address that is not an IP", () => {
    expect(allows(["0.0.0.0/0"], "unknown")).toBe(false);
    expect(allows(["0.0.0.0/0"], "")).toBe(false);
  });

  it("refuse malformed CIDRs instead of reading them as a wider range", () => {
    for (const bad of ["10.0.0.0/", "10.0.0.0/33", "10.0.0.0/8/9", "10.0.0.0/0x8", "10.0.0.0/8.0", "10.0.0.0/-1", "::1/129", "10.0.0", "example.com", ""]) {
      expect(() => parseCidr(bad)).toThrow(RangeError);
    }
  });
});

describe("the address a throttle counts by", () => {
  it("is an IPv4 address as it is", () => {
    expect(throttleAddress("203.0.113.9")).toBe("203.0.113.9");
  });

  it("is the IPv4 address of an IPv4-mapped IPv6 one, in either spelling", () => {
    expect(throttleAddress("::ffff:203.0.113.9")).toBe("203.0.113.9");
    expect(throttleAddress("::FFFF:cb00:7109")).toBe("203.0.113.9");
  });

  it("is the /64 of an IPv6 address, however it is written", () => {
    expect(throttleAddress("2001:db8:1:2:3:4:5:6")).toBe("2001:db8:1:2::/64");
    expect(throttleAddress("2001:0db8:0001:0002::ffff")).toBe("2001:db8:1:2::/64");
    expect(throttleAddress("2001:db8::1")).toBe("2001:db8:0:0::/64");
    expect(throttleAddress("fe80::1%eth0")).toBe("fe80:0:0:0::/64");
  });

  it("is the text itself when it is no address", () => {
    expect(throttleAddress("unknown")).toBe("unknown");
  });
});

describe("the ip restriction on a real connection", () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway();
  });
  afterAll(() => gw.stop());

  it("serves a key whose allow-list holds the caller's address", async () => {
    const a = await gw.account(1, { ipAllow: ["127.0.0.0/8", "2001:db8::/32"] });
    expect((await getWithKey(gw, "/v1/me", a.key)).status).toBe(200);
  });

  it("serves a key whose allow-list holds the caller's IPv4 range written IPv4-mapped", async () => {
    const a = await gw.account(1, { ipAllow: ["::ffff:127.0.0.0/104"] });
    expect((await getWithKey(gw, "/v1/me", a.key)).status).toBe(200);
  });

  it("refuses other callers with 403 ip", async () => {
    const a = await gw.account(1, { ipAllow: ["10.0.0.0/8"] });
    const res = await getWithKey(gw, "/v1/me", a.key);
    expect(res.status).toBe(403);
    expect(await errorOf(res)).toMatchObject({ type: "permission_error", code: "ip" });
  });

  it("ignores X-Forwarded-For when server.trust_proxy lists no proxy", async () => {
    const a = await gw.account(1, { ipAllow: ["10.0.0.0/8"] });
    const res = await getWithKey(gw, "/v1/me", a.key, { "x-forwarded-for": "10.1.2.3" });
    expect(res.status).toBe(403);
    expect((await errorOf(res)).code).toBe("ip");
  });
});

describe("the ip restriction behind a trusted proxy (server.trust_proxy = [\"127.0.0.1\"])", () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway({ server: { trust_proxy: ["127.0.0.1"] } });
  });
  afterAll(() => gw.stop());

  it("takes the client address from X-Forwarded-For (IPv4)", async () => {
    const a = await gw.account(1, { ipAllow: ["10.0.0.0/8"] });
    expect((await getWithKey(gw, "/v1/me", a.key, { "x-forwarded-for": "10.1.2.3" })).status).toBe(200);
    const res = await getWithKey(gw, "/v1/me", a.key, { "x-forwarded-for": "203.0.113.5" });
    expect(res.status).toBe(403);
    expect((await errorOf(res)).code).toBe("ip");
  });

  it("takes the client address from X-Forwarded-For (IPv6)", async () => {
    const a = await gw.account(1, { ipAllow: ["2001:db8::/32"] });
    expect((await getWithKey(gw, "/v1/me", a.key, { "x-forwarded-for": "2001:db8::5" })).status).toBe(200);
    expect((await getWithKey(gw, "/v1/me", a.key, { "x-forwarded-for": "2001:db9::5" })).status).toBe(403);
  });

  it("falls back to the socket address when the header is absent", async () => {
    const a = await gw.account(1, { ipAllow: ["127.0.0.1"] });
    expect((await getWithKey(gw, "/v1/me", a.key)).status).toBe(200);
  });

  // A proxy appends the address it saw, so only the right-most entry can be trusted.
  it("does not let a client spoof its address by sending its own X-Forwarded-For through the proxy", async () => {
    const a = await gw.account(1, { ipAllow: ["10.0.0.0/8"] });
    const res = await getWithKey(gw, "/v1/me", a.key, { "x-forwarded-for": "10.1.2.3, 203.0.113.5" });
    expect(res.status).toBe(403);
  });
});

describe("server.trust_proxy trusts only the proxies it lists", () => {
  let gw: TestGateway;
  afterAll(() => gw?.stop());

  it("ignores X-Forwarded-For from a direct caller that is not a listed proxy", async () => {
    gw = await startTestGateway({ server: { trust_proxy: ["10.9.9.9", "192.168.0.0/16"] } });
    const a = await gw.account(1, { ipAllow: ["10.0.0.0/8"] });
    const res = await getWithKey(gw, "/v1/me", a.key, { "x-forwarded-for": "10.1.2.3" });
    expect(res.status).toBe(403);
    expect((await errorOf(res)).code).toBe("ip");
  });
});

describe("server.trust_proxy walks X-Forwarded-For from the right past trusted hops", () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway({ server: { trust_proxy: ["127.0.0.1", "10.0.0.0/8"] } });
  });
  afterAll(() => gw.stop());

  it("takes the first untrusted address left of the trusted hops as the client", async () => {
    const a = await gw.account(1, { ipAllow: ["203.0.113.0/24"] });
    expect((await getWithKey(gw, "/v1/me", a.key, { "x-forwarded-for": "203.0.113.5, 10.0.0.7" })).status).toBe(200);
  });

  it("does not take a trusted hop for the client", async () => {
    const a = await gw.account(1, { ipAllow: ["10.0.0.0/8"] });
    const res = await getWithKey(gw, "/v1/me", a.key, { "x-forwarded-for": "198.51.100.1, 10.0.0.7" });
    expect(res.status).toBe(403);
    expect((await errorOf(res)).code).toBe("ip");
  });
});

describe("clientAddress", () => {
  const trusted = parseCidrList(["127.0.0.1", "10.0.0.0/8"]);
  it("is the peer when the peer is not trusted", () => {
    expect(clientAddress("198.51.100.9", "10.1.1.1", trusted)).toBe("198.51.100.9");
  });
  it("is the peer when no proxy is trusted", () => {
    expect(clientAddress("127.0.0.1", "10.1.1.1", [])).toBe("127.0.0.1");
  });
  it("is the right-most untrusted entry behind trusted peers", () => {
    expect(clientAddress("127.0.0.1", "1.1.1.1, 2.2.2.2, 10.0.0.1, 10.0.0.2", trusted)).toBe("2.2.2.2");
  });
  it("is the left-most entry when every hop is trusted", () => {
    expect(clientAddress("127.0.0.1", "10.0.0.3, 10.0.0.2", trusted)).toBe("10.0.0.3");
  });
  it("is the peer when the header is absent", () => {
    expect(clientAddress("127.0.0.1", null, trusted)).toBe("127.0.0.1");
  });
});

describe("the ip restriction over IPv6", () => {
  let gw: TestGateway;
  let base: string;
  beforeAll(async () => {
    gw = await startTestGateway({ server: { host: "::1" } });
    base = `http://[::1]:${gw.port}`;
  });
  afterAll(() => gw.stop());

  it("serves an IPv6 caller inside an IPv6 prefix", async () => {
    const a = await gw.account(1, { ipAllow: ["::1/128"] });
    expect((await getWithKey({ url: base }, "/v1/me", a.key)).status).toBe(200);
  });

  it("refuses an IPv6 caller when the list holds only IPv4 prefixes", async () => {
    const a = await gw.account(1, { ipAllow: ["127.0.0.0/8"] });
    const res = await getWithKey({ url: base }, "/v1/me", a.key);
    expect(res.status).toBe(403);
    expect((await errorOf(res)).code).toBe("ip");
  });
});
