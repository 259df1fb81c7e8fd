import { describe, expect, it } from "bun:test";
import { readdirSync, readFileSync, realpathSync, statSync } from "node:fs";
import { join, relative } from "node:path";

// The code and the docs speak for themselves: what clients rely on is in docs/api.md (cited with
// its anchors), so nothing in src/, docs/ or the README points at a document a reader of the
// repository does not have: a design file, a spec, an issue tracker's numbers.
const ROOT = realpathSync(join(import.meta.dir, "../.."));

/**
 * The embedded migrations are not scanned: they are a generated copy of drizzle/ and drizzle-pg/,
 * SQL already applied to databases in the field (the migrator records each one's hash), and history
 * is not rewritten.
 */
const HISTORY = /migrations\.gen\.ts$/;

const CITATIONS: [string, RegExp][] = [
  ["an issue number", /\bissues?\s*#?\d+/i],
  ["a numbered item of a list kept elsewhere", /\bitems?\s+\d+/i],
  ["the design file", /\bDESIGN\b/],
  ["a spec", /\bspec\b|spec\.md/i],
  ["a folder outside the repository", /\.\.\/shared|\/work\//],
];

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? files(path) : [path];
  });
}

const scanned = [...files(join(ROOT, "src")), ...files(join(ROOT, "docs")), join(ROOT, "README.md")].filter((f) => !HISTORY.test(f));

describe("src/, docs/ and the README", () => {
  it("are all scanned (the scan finds the code and the client contract)", () => {
    const names = scanned.map((f) => relative(ROOT, f));
    expect(names).toContain("docs/api.md");
    expect(names).toContain("src/http/endpoints.ts");
  });

  for (const [what, pattern] of CITATIONS) {
    it(`cite no document outside the repository: ${what}`, () => {
      const found: string[] = [];
      for (const file of scanned) {
        readFileSync(file, "utf8")
          .split("\n")
          .forEach((line, i) => {
            if (pattern.test(line)) found.push(`${relative(ROOT, file)}:${i + 1}: ${line.trim().slice(0, 120)}`);
          });
      }
      expect(found).toEqual([]);
    });
  }
});
