export { compile, Compiler, type CompileConfig } from "./compile.ts";
export { DEFAULT_COMPILE_CONFIG } from "./config.ts";
export { explain, normaliseRequest } from "./explain.ts";
export type * from "./explain-types.ts";
export { ANNOTATIONS, parseAnnotations } from "./annotations.ts";
export type * from "./types.ts";
