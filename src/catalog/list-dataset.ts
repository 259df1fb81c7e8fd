// The bundled list-price dataset's name and version, apart from the dataset itself: the help text and
// docs name it without loading it (about 80 ms, which only `gateway prices --check` pays).
import pkg from "@pydantic/genai-prices/package.json" with { type: "json" };

export const LIST_DATASET = { name: "@pydantic/genai-prices", version: pkg.version };
