import { afterAll, afterEach, beforeAll, describe, expect, it, setDefaultTimeout } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openTab, type Tab } from "./support.ts";

// The dashboard's form helpers (src/dashboard/ui/dom.ts) in a real browser, on a page of their own:
// what every form of the dashboard relies on, checked once here rather than through each view.

setDefaultTimeout(30_000);

let tab: Tab;
let helpers: string;

beforeAll(async () => {
  // The helpers as the bundle has them, exposed on window for the page's scripts below.
  const dir = mkdtempSync(join(tmpdir(), "gw-dom-"));
  const entry = join(dir, "entry.ts");
  writeFileSync(entry, `import { confirmed, messages, onSubmit } from ${JSON.stringify(join(import.meta.dir, "../../src/dashboard/ui/dom.ts"))};\nObject.assign(window, { gw: { confirmed, messages, onSubmit } });\n`);
  const built = await Bun.build({ entrypoints: [entry], format: "iife", target: "browser" });
  rmSync(dir, { recursive: true, force: true });
  expect(built.success).toBe(true);
  helpers = await built.outputs[0]!.text();
  tab = await openTab("dom", "http://127.0.0.1");
});

afterAll(async () => {
  await tab?.close();
});

afterEach(() => {
  expect(tab.problems()).toEqual([]);
});

async function blankPage(html: string): Promise<void> {
  await tab.page.setContent(`<!doctype html><main>${html}</main><output id="got"></output>`);
  await tab.page.addScriptTag({ content: helpers });
}

/** What the page wrote into #got once something did. */
async function got(): Promise<string> {
  const out = tab.page.locator("#got:not(:empty)");
  await out.waitFor();
  return (await out.textContent()) ?? "";
}

describe("onSubmit", () => {
  it("hands its handler the name=value of the button that submitted the form", async () => {
    await blankPage(`<form id="f"><button name="pick" value="first">First</button> <button name="pick" value="second">Second</button></form>`);
    await tab.page.evaluate(`void gw.onSubmit(document.getElementById("f"), gw.messages(), async (d) => { got.textContent = String(d.get("pick")); })`);
    await tab.page.getByRole("button", { name: "Second" }).click();
    expect(await got()).toBe("second");
  });
});

describe("confirmed", () => {
  async function ask(): Promise<void> {
    await blankPage("");
    // void: evaluate would wait for the answer, which only the steps below give.
    await tab.page.evaluate(`void gw.confirmed("Debit 1.00 USD from a@b.c?", "Debit 1.00 USD").then((yes) => { got.textContent = String(yes); })`);
  }

  it("opens a modal dialog named by its question, with the focus on Cancel", async () => {
    await ask();
    await tab.page.getByRole("alertdialog", { name: "Debit 1.00 USD from a@b.c?" }).waitFor();
    expect(await tab.page.evaluate("document.activeElement.textContent")).toBe("Cancel");
    expect(await tab.page.evaluate("document.querySelector('dialog').matches(':modal')")).toBe(true);
  });

  it("answers true when its button is pressed, and is gone", async () => {
    await ask();
    await tab.page.getByRole("button", { name: "Debit 1.00 USD" }).click();
    expect(await got()).toBe("true");
    expect(await tab.page.locator("dialog").count()).toBe(0);
  });

  it("answers false on Cancel", async () => {
    await ask();
    await tab.page.getByRole("button", { name: "Cancel" }).click();
    expect(await got()).toBe("false");
  });

  it("answers false on Escape", async () => {
    await ask();
    await tab.page.getByRole("alertdialog").waitFor();
    await tab.page.keyboard.press("Escape");
    expect(await got()).toBe("false");
  });
});
