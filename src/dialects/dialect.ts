/** The two text dialects an upstream speaks; the Responses API is served over Chat (dialects/responses). */
export type Dialect = "messages" | "chat";
