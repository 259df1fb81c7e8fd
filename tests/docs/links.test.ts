import { describe, expect, it } from "bun:test";
import { existsSync, readdirSync, readFileSync, realpathSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";

// The README and docs/ travel with the repository (a clone, a tarball, the image's build context):
// every link must land on a file inside it.
const ROOT = realpathSync(join(import.meta.dir, "../.."));

function markdownFiles(): string[] {
  const docs = (dir: string): string[] =>
    readdirSync(dir).flatMap((name) => {
      const path = join(dir, name);
      return statSync(path).isDirectory() ? docs(path) : name.endsWith(".md") ? [path] : [];
    });
  return [join(ROOT, "README.md"), ...docs(join(ROOT, "docs"))];
}

/** Inline Markdown links and images outside code blocks: [text](target). */
function links(text: string): string[] {
  const prose = text.replace(/^```[\s\S]*?^```/gm, "").replace(/`[^`\n]*`/g, "");
  return [...prose.matchAll(/!?\[[^\]]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)].map((m) => m[1]!);
}

/** GitHub's heading anchors: lower case, punctuation dropped, spaces to hyphens. */
function anchors(file: string): Set<string> {
  const text = readFileSync(file, "utf8").replace(/^```[\s\S]*?^```/gm, "");
  return new Set(
    [...text.matchAll(/^#{1,6}\s+(.+)$/gm)].map((m) =>
      m[1]!.trim().toLowerCase().replace(/[^\p{L}\p{N}\s_-]/gu, "").replace(/\s/g, "-"),
    ),
  );
}

const files = markdownFiles();

describe("README and docs/", () => {
  it("include the operator's pages", () => {
    const names = files.map((f) => relative(ROOT, f));
    for (const page of ["README.md", "docs/api.md", "docs/operations.md", "docs/database.md"]) expect(names).toContain(page);
  });

  for (const file of files) {
    const name = relative(ROOT, file);
    const text = readFileSync(file, "utf8");

    it(`${name} never points outside the repository`, () => {
      expect(text).not.toContain("../shared");
      expect(text).not.toMatch(/\/work\/|spec\.md/);
    });

    it(`${name}: every relative link resolves to a file or folder in the repository`, () => {
      for (const target of links(text)) {
        if (/^(https?|mailto):/.test(target)) throw new Error(`${name}: links out of the repository: ${target}`);
        const [path, fragment] = target.split("#") as [string, string | undefined];
        const dest = path === "" ? file : resolve(dirname(file), path);
        expect({ target, inside: !relative(ROOT, dest).startsWith("..") }).toEqual({ target, inside: true });
        expect({ target, exists: existsSync(dest) }).toEqual({ target, exists: true });
        if (fragment && dest.endsWith(".md")) expect({ target, anchor: anchors(dest).has(fragment) }).toEqual({ target, anchor: true });
      }
    });
  }

  // A citation in code (a comment, a help text) or in a Markdown code span is no link the test above
  // reads, yet it sends a reader to a heading all the same.
  it("every anchor of a page cited in src/, and in docs/ and the README inside code, names a heading", () => {
    const walk = (dir: string): string[] =>
      readdirSync(dir).flatMap((name) => {
        const path = join(dir, name);
        return statSync(path).isDirectory() ? walk(path) : /\.(ts|md|html|css)$/.test(name) ? [path] : [];
      });
    const broken: string[] = [];
    for (const file of [...walk(join(ROOT, "src")), ...files]) {
      const text = readFileSync(file, "utf8");
      for (const [cited, page, fragment] of text.matchAll(/((?:docs\/)?[a-z-]+\.md)#([a-z0-9][a-z0-9_-]*)/g)) {
        const dest = page!.startsWith("docs/") || page === "README.md" ? join(ROOT, page!) : file.endsWith(".md") ? resolve(dirname(file), page!) : join(ROOT, "docs", page!);
        if (!existsSync(dest) || !anchors(dest).has(fragment!)) broken.push(`${relative(ROOT, file)}: ${cited}`);
      }
      if (file.endsWith(".md"))
        for (const [cited, fragment] of text.matchAll(/\(#([a-z0-9][a-z0-9_-]*)\)/g)) if (!anchors(file).has(fragment!)) broken.push(`${relative(ROOT, file)}: ${cited}`);
    }
    expect(broken).toEqual([]);
  });

  it("the README links the client contract and the operations guide", () => {
    const readme = links(readFileSync(join(ROOT, "README.md"), "utf8"));
    expect(readme).toContain("docs/api.md");
    expect(readme).toContain("docs/operations.md");
  });

  it("the README keeps the start and test commands that .ci/run relies on", () => {
    const readme = readFileSync(join(ROOT, "README.md"), "utf8");
    expect(readme).toContain("```sh\nbun install && bun run start\n```");
    expect(readme).toContain("```sh\nbun test\n```");
  });
});
