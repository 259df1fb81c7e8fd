// Loads the JSON-in → JSON-out pairs under tests/fixtures/translation/<direction>/:
// <case>.in.json, <case>.out.json and optionally <case>.opts.json (merged over the defaults).
// The file name is the behaviour: "tool_choice-auto-stays-auto" → test "tool_choice auto stays auto".

import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";

export interface TranslationCase {
  name: string;
  input: unknown;
  expected: unknown;
  opts: Record<string, unknown>;
}

const root = join(import.meta.dir, "..", "fixtures", "translation");
const readJson = (file: string): unknown => JSON.parse(readFileSync(file, "utf8"));

export function translationCases(direction: string): TranslationCase[] {
  const dir = join(root, direction);
  const files = readdirSync(dir);
  return files
    .filter((f) => f.endsWith(".in.json"))
    .sort()
    .map((f) => {
      const base = f.slice(0, -".in.json".length);
      return {
        name: base.replaceAll("-", " "),
        input: readJson(join(dir, f)),
        expected: readJson(join(dir, `${base}.out.json`)),
        opts: files.includes(`${base}.opts.json`) ? (readJson(join(dir, `${base}.opts.json`)) as Record<string, unknown>) : {},
      };
    });
}
