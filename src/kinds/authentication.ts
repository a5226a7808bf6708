// The `authentication` stage (nginx's access phase, after the source ranges): auth-type basic
// and auth-url, and `satisfy any` over them and the source ranges. Every kind of the stage is
// defined or exported here; each is long enough for a file of its own (basic-auth.ts,
// external-auth.ts, satisfy.ts).
export { BASIC_AUTH } from "./basic-auth.ts";
export { EXTERNAL_AUTH } from "./external-auth.ts";
export { SATISFY_ANY } from "./satisfy.ts";
