// The `authentication` stage (nginx's access phase, after the source ranges): auth-type basic
// and auth-url. Every kind of the stage is defined or exported here; both are long enough for
// a file of their own (basic-auth.ts, external-auth.ts).
export { BASIC_AUTH } from "./basic-auth.ts";
export { EXTERNAL_AUTH } from "./external-auth.ts";
