import { describe, expect, it } from "bun:test";
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";

// The import graph is the check of the layering (docs/architecture.md): every import runs down this
// list or stays in its own folder, and no files import each other in a circle.

/** Bottom to top: a folder (or top-level file) may import only those before it, and itself. */
const LAYERS = [
  "core",
  "wire",
  "config",
  // The money path's policy: a hold's life, the estimate and its calibration (no engine, no table).
  "ledger",
  // The stores: one folder per owner of data (contract, SQLite, PostgreSQL), their engines' plumbing, the schemas.
  "store",
  "auth",
  "limits",
  "catalog",
  "dialects",
  "upstreams",
  "payments",
  "observe",
  // What is told outside a request: emails and the operator's webhook events, sent in the background.
  "notices",
  "relay",
  "services",
  "http",
  // The dashboard's page and its browser code: above http, whose wire shapes its views may name (as types only).
  "dashboard",
  "server",
  "cli",
] as const;

const SRC = resolve(import.meta.dir, "../../src");

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sourceFiles(path);
    return path.endsWith(".ts") ? [path] : [];
  });
}

/** Relative imports and re-exports of each file, as paths under src/ (type-only ones too: they are still a dependency). */
function importGraph(): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const file of sourceFiles(SRC)) {
    const text = readFileSync(file, "utf8");
    const targets = [...text.matchAll(/^(?:import|export)\s[^;]*?\bfrom\s+"(\.{1,2}\/[^"]+)"/gms)].map((m) => relative(SRC, resolve(dirname(file), m[1]!)));
    graph.set(relative(SRC, file), targets);
  }
  return graph;
}

const layerOf = (file: string) => file.split("/")[0]!.replace(/\.ts$/, "");

const graph = importGraph();

describe("the import graph of src/", () => {
  it("places every folder and top-level file in a layer", () => {
    const unplaced = [...new Set([...graph.keys()].map(layerOf))].filter((l) => !(LAYERS as readonly string[]).includes(l));
    expect(unplaced).toEqual([]);
  });

  it("has no import that runs back up the layers", () => {
    const upward: string[] = [];
    for (const [file, targets] of graph) {
      const from = LAYERS.indexOf(layerOf(file) as (typeof LAYERS)[number]);
      for (const target of targets) {
        const to = LAYERS.indexOf(layerOf(target) as (typeof LAYERS)[number]);
        if (to > from) upward.push(`${file} -> ${target}`);
      }
    }
    expect(upward).toEqual([]);
  });

  it("has no import of a file that is not there", () => {
    // An asset (the dashboard's HTML import, its CSS) is a file of its own, not a module of the graph.
    const missing = [...graph.values()].flat().filter((t) => !graph.has(t) && !(/\.(html|css)$/.test(t) && existsSync(join(SRC, t))));
    expect(missing).toEqual([]);
  });

  it("reaches the stores only through a contract, the composition point or the database's life", () => {
    // Above src/store/ the code is engine-free: a contract says what it may ask, store/open.ts builds
    // the SQLite set or the PostgreSQL set, store/database.ts migrates, locks and copies the database.
    const engineFree = (target: string) => /^store\/(?:[^/]+\/contract|open|database)\.ts$/.test(target);
    const reaching: string[] = [];
    for (const [file, targets] of graph) {
      if (file.startsWith("store/")) continue;
      for (const target of targets) if (target.startsWith("store/") && !engineFree(target)) reaching.push(`${file} -> ${target}`);
    }
    expect(reaching).toEqual([]);
  });

  it("has no circle of files importing each other", () => {
    // Tarjan's strongly connected components: any component of more than one file is a circle.
    let next = 0;
    const index = new Map<string, number>();
    const low = new Map<string, number>();
    const stack: string[] = [];
    const onStack = new Set<string>();
    const circles: string[][] = [];
    const visit = (v: string) => {
      index.set(v, next);
      low.set(v, next++);
      stack.push(v);
      onStack.add(v);
      for (const w of graph.get(v) ?? []) {
        if (!graph.has(w)) continue;
        if (!index.has(w)) {
          visit(w);
          low.set(v, Math.min(low.get(v)!, low.get(w)!));
        } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
      }
      if (low.get(v) !== index.get(v)) return;
      const component: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        component.push(w);
      } while (w !== v);
      if (component.length > 1 || (graph.get(v) ?? []).includes(v)) circles.push(component.sort());
    };
    for (const file of graph.keys()) if (!index.has(file)) visit(file);
    expect(circles).toEqual([]);
  });
});
