// ingress-nginx's regex paths and rewrite-target, pure (no I/O, clock or timers):
// docs/design.md "Regular expressions".
export { compilePathRegex, MAX_PATTERN_LENGTH, MAX_PROGRAM_SIZE, PathRegex } from "./path-regex.ts";
export type { PathMatch, PathRegexResult } from "./path-regex.ts";
export { compileRewriteTarget, compileTemplate, expandRewrite, isValidRewriteTarget } from "./rewrite.ts";
export type { RewriteTarget, RewriteTargetResult } from "./rewrite.ts";
export { expandLocations, hostUsesRegex, needsRewrite, orderLocations, regexLocations } from "./locations.ts";
export type { DeclaredPathType, HostPath, RegexLocation } from "./locations.ts";
export { RegexLocationSet, SET_DFA_BUDGET } from "./set.ts";
export { translatePcre } from "./translate.ts";
export type { Translation } from "./translate.ts";
export { compileRegexHost } from "./host.ts";
export type { CompiledLocation, RefusedLocation, RegexHost } from "./host.ts";
export { compileHeaderPattern } from "./header-pattern.ts";
export type { HeaderPattern, HeaderPatternResult } from "./header-pattern.ts";
