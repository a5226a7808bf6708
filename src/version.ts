// Version and commit of this build. scripts/build.ts replaces the two globals below with string
// literals through `bun build --define`; when running from sources they do not exist, so every
// read goes through `typeof` (a bare reference to an undeclared global would throw).
import pkg from "../package.json" with { type: "json" };

declare const PORTICO_VERSION: string | undefined;
declare const PORTICO_COMMIT: string | undefined;

export const VERSION: string = typeof PORTICO_VERSION === "string" ? PORTICO_VERSION : pkg.version;
/** Short git commit of the build; "dev" when running from sources (no build step ran). */
export const COMMIT: string = typeof PORTICO_COMMIT === "string" ? PORTICO_COMMIT : "dev";

/** One line for `portico --version`. */
export function versionLine(): string {
  return `portico ${VERSION} (commit ${COMMIT}, bun ${process.versions.bun ?? "?"})`;
}
