export * from "./manifests.ts";
export { EPOCH, parseManifestText, type FileParse, type LoadedObject } from "./documents.ts";
