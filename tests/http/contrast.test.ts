import { describe, expect, it } from "bun:test";

// Muted text (hints, captions of figures, empty lists, the labels of a phone's table cards) must stay
// readable: WCAG's 4.5:1 against every background it sits on, in the light and the dark scheme,
// computed from the stylesheet's own custom properties.

const css = await Bun.file(new URL("../../src/dashboard/style.css", import.meta.url)).text();

/** The custom properties of the first `:root { … }` after `from` in the stylesheet. */
function vars(from: number): Record<string, string> {
  const start = css.indexOf(":root", from);
  const body = css.slice(css.indexOf("{", start) + 1, css.indexOf("}", start));
  return Object.fromEntries([...body.matchAll(/--([\w-]+):\s*(#[0-9a-fA-F]{6})/g)].map((m) => [m[1]!, m[2]!]));
}

const light = vars(0);
const dark = { ...light, ...vars(css.indexOf("prefers-color-scheme: dark")) };

function luminance(hex: string): number {
  const [r, g, b] = [1, 3, 5].map((i) => {
    const c = parseInt(hex.slice(i, i + 2), 16) / 255;
    return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
  });
  return 0.2126 * r! + 0.7152 * g! + 0.0722 * b!;
}

function contrast(a: string, b: string): number {
  const [hi, lo] = [luminance(a), luminance(b)].sort((x, y) => y - x);
  return (hi! + 0.05) / (lo! + 0.05);
}

describe("the dashboard's muted text", () => {
  for (const [scheme, v] of [["light", light], ["dark", dark]] as const) {
    for (const bg of ["bg", "panel", "warn-bg"]) {
      it(`has at least 4.5:1 contrast against --${bg} in the ${scheme} scheme`, () => {
        expect(contrast(v.muted!, v[bg]!)).toBeGreaterThanOrEqual(4.5);
      });
    }
  }
});
