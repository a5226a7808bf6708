import type { Config } from "../config/types.ts";

/** The part of Config the compiler reads. */
export type CompileConfig = Pick<
  Config,
  "ingressClass" | "controllerName" | "watchIngressWithoutClass" | "defaultBackendService" | "defaultSslCertificate" | "allowExternalNameServices"
>;

/** Flag defaults (config/flags.ts), for tests and tools. */
export const DEFAULT_COMPILE_CONFIG: CompileConfig = Object.freeze({
  ingressClass: "portico",
  controllerName: "portico.dev/ingress-controller",
  watchIngressWithoutClass: false,
  defaultBackendService: null,
  defaultSslCertificate: null,
  allowExternalNameServices: false,
});
