// Pieces of parameter schemas and checks that kinds of several stages share (each kind's own
// schema is written beside its build, in the module of its stage).
import * as v from "valibot";
import { FIELD_VALUE, FRAMING } from "../policy/headers.ts";

export const Str = v.string();
export const NullableStr = v.nullable(v.string());
export const Strings = v.array(v.string());
export const Pair = v.tuple([v.string(), v.string()]);
/** An affinity cookie's name (canary and affinity both read it). */
export const CookieName = v.pipe(v.string(), v.regex(/^[A-Za-z0-9._~-]{1,128}$/));

/** RFC 9110 §5.1 field name (token), lowercased as the compiler writes it. */
const LOWER_TOKEN = /^[!#$%&'*+.^_`|~0-9a-z-]+$/;
const editable = (n: string) => LOWER_TOKEN.test(n) && !FRAMING.has(n);
/**
 * The compiler's checks again (compile/gateway/rules.ts): the table reached this worker as
 * JSON, and a field it cannot send must refuse the route (500), never reach a header line.
 */
export const editableFields = (set: readonly [string, string][], add: readonly [string, string][], remove: readonly string[]) =>
  [...set, ...add].every(([n, v]) => editable(n) && FIELD_VALUE.test(v)) && remove.every(editable);
