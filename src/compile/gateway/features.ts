// The Gateway API features Portico serves, as GatewayClass `status.supportedFeatures` names
// them (pkg/features in kubernetes-sigs/gateway-api v1.6; apis/v1 gatewayclass_types.go:
// "MUST be sorted in ascending alphabetical order by the Name key"). A conformance run reads
// this list to choose the tests it runs, so a name goes here only with its transcribed
// Extended tests passing (README "Gateway API").
export const SUPPORTED_FEATURES: readonly string[] = Object.freeze(
  [
    "Gateway",
    // Client certificate validation of HTTPS listeners (spec.tls.frontend: compile/gateway/attach.ts,
    // the handshake check in table/client-certs.ts strictClientCas); their four tests transcribed
    // in test/gateway/client-validation.ts, on the shared ports and with --gateway-ports.
    "GatewayFrontendClientCertificateValidation",
    "GatewayFrontendClientCertificateValidationInsecureFallback",
    "GatewayHTTPListenerIsolation",
    "GRPCRoute",
    "GRPCRouteNamedRouteRule",
    // Standard since the release after v1.6.1 (pkg/features grpcroute.go); served as for
    // HTTPRoute, its test transcribed in test/gateway/grpc.test.ts.
    "GRPCRouteRequestHeaderModifier",
    "HTTPRoute",
    "ReferenceGrant",
    "HTTPRoute303RedirectStatusCode",
    "HTTPRoute307RedirectStatusCode",
    "HTTPRoute308RedirectStatusCode",
    "HTTPRouteBackendProtocolH2C",
    "HTTPRouteBackendProtocolWebSocket",
    "HTTPRouteBackendRequestHeaderModification",
    // Standard since the release after v1.6.1 (pkg/features httproute.go): a backendRef's
    // RequestRedirect and URLRewrite (compile/gateway/rules.ts).
    "HTTPRouteBackendRequestRedirect",
    "HTTPRouteBackendURLRewrite",
    "HTTPRouteBackendTimeout",
    "HTTPRouteCORS",
    "HTTPRouteHostRewrite",
    "HTTPRouteMethodMatching",
    "HTTPRouteNamedRouteRule",
    "HTTPRoutePathRedirect",
    "HTTPRoutePathRewrite",
    "HTTPRoutePortRedirect",
    "HTTPRouteQueryParamMatching",
    "HTTPRouteRequestMirror",
    "HTTPRouteRequestMultipleMirrors",
    "HTTPRouteRequestPercentageMirror",
    "HTTPRouteRequestTimeout",
    "HTTPRouteResponseHeaderModification",
    "HTTPRouteSchemeRedirect",
  ].sort(),
);
