// Bun bundles a CSS import into the page; TypeScript needs only to know that it is one.
declare module "*.css";
