// The Gateway manifests of upstream's client certificate validation tests
// (conformance/tests/gateway-*client-certificate-validation*.yaml), written once for the
// compile-level checks (compile.test.ts) and the served ones (client-validation.ts).
import { INFRA, WEB } from "./base.ts";

const certRef = `tls: { certificateRefs: [{ group: "", kind: Secret, name: tls-validity-checks-certificate, namespace: ${INFRA} }] }`;

/** One HTTPS listener line of those Gateways (the suite's certificate; routes from its own namespace). */
export const validatedHttpsListener = (name: string, port: number, hostname: string | null) =>
  `    - { name: ${name}, port: ${port},${hostname === null ? "" : ` hostname: ${hostname},`} protocol: HTTPS, allowedRoutes: { namespaces: { from: Same } }, ${certRef} }`;

/** gateway-with-invalid-clientcertificate-validation.yaml: one listener per way a caCertificateRef can be invalid. */
export const invalidClientValidationGateway = `apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: { name: gateway-with-invalid-client-cert-validation, namespace: ${INFRA} }
spec:
  gatewayClassName: portico
  tls:
    frontend:
      default: { validation: { caCertificateRefs: [{ kind: ConfigMap, group: "", name: tls-validity-checks-ca-certificate }] } }
      perPort:
        - { port: 7443, tls: { validation: { caCertificateRefs: [{ kind: ConfigMap, group: "", name: non-exisitng-cm }] } } }
        - { port: 8443, tls: { validation: { caCertificateRefs: [{ kind: Service, group: "", name: infra-backend-v2 }] } } }
        - { port: 6443, tls: { validation: { caCertificateRefs: [{ kind: ConfigMap, group: "", name: web-backend-cm, namespace: ${WEB} }] } } }
  listeners:
${validatedHttpsListener("https", 443, null)}
${validatedHttpsListener("https-unresolved", 7443, "first-example.org")}
${validatedHttpsListener("https-invalid-kind", 8443, "second-example.org")}
${validatedHttpsListener("https-grant-missing", 6443, "fourth-example.org")}`;

/** gateway-with-invalid-default-client-certificate-validation.yaml: an unresolvable default CA, an HTTP listener beside. */
export const invalidDefaultClientValidationGateway = `apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: { name: invalid-default-client-validation-config, namespace: ${INFRA} }
spec:
  gatewayClassName: portico
  tls:
    frontend:
      default: { validation: { caCertificateRefs: [{ kind: ConfigMap, group: "", name: does-not-exist }] } }
      perPort: [{ port: 80, tls: { validation: { caCertificateRefs: [{ kind: ConfigMap, group: "", name: tls-validity-checks-per-port-ca-certificate }] } } }]
  listeners:
${validatedHttpsListener("https", 443, null)}
    - { name: http, port: 80, protocol: HTTP, allowedRoutes: { namespaces: { from: Same } } }`;
