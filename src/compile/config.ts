import type { Config } from "../config/types.ts";

/** The part of Config the compiler reads. */
export type CompileConfig = Pick<
  Config,
  "ingressClass" | "controllerName" | "watchIngressWithoutClass" | "ingressNginxCompat" | "defaultBackendService" | "customHttpErrors" | "defaultSslCertificate" | "allowExternalNameServices"
  | "allowlistSourceRange" | "denylistSourceRange"
>;
