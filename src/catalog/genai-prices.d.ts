// The package's exports map names only its code, so TypeScript will not resolve its package.json;
// Bun reads it (and the compiled binary carries it), for the dataset's version in the report.
declare module "@pydantic/genai-prices/package.json" {
  const pkg: { version: string };
  export default pkg;
}
