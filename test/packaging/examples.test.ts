// k8s/examples/app: the example a newcomer applies first must route as written: it parses with
// Portico's own schemas, names our IngressClass, and its backend resolves to the echo pods.
import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { load } from "js-yaml";
import { parseObject } from "../../src/model/kinds.ts";
import { type Manifest, K8S_DIR, find, loadDir, resourceFiles } from "./k8s.ts";

const DIR = join(K8S_DIR, "examples/app");
const docs = loadDir(DIR);
const controller = loadDir(K8S_DIR);

interface PodTemplate {
  metadata: { labels: Record<string, string> };
  spec: { containers: { name: string; ports?: { name?: string; containerPort: number }[]; securityContext?: Record<string, unknown> }[]; securityContext?: Record<string, unknown> };
}

describe("example app", () => {
  test("kustomization lists every file", () => {
    const k = load(readFileSync(join(DIR, "kustomization.yaml"), "utf8")) as { resources: string[] };
    expect([...k.resources].sort()).toEqual(resourceFiles(DIR));
  });

  test("the Ingress and Service parse with Portico's schemas", () => {
    for (const kind of ["Ingress", "Service"] as const) {
      for (const { doc } of docs.filter((l) => l.doc.kind === kind)) {
        const r = parseObject(kind, doc);
        expect(r.ok ? "ok" : r.diagnostic.message).toBe("ok");
      }
    }
  });

  test("the Ingress uses the portico class, TLS covers its host, and the backend resolves to pod ports", () => {
    const r = parseObject("Ingress", find(docs, "Ingress", "echo"));
    if (!r.ok) throw new Error(r.diagnostic.message);
    const ing = r.object;
    const cls = find<Manifest & { spec: { controller: string } }>(controller, "IngressClass", ing.spec?.ingressClassName ?? "");
    expect(cls.spec.controller).toBe("portico.dev/ingress-controller");

    const hosts = (ing.spec?.rules ?? []).map((x) => x.host);
    const tls = ing.spec?.tls ?? [];
    expect(tls.length).toBe(1);
    expect(tls[0]?.secretName).toBe("echo-tls");
    expect(tls[0]?.hosts).toEqual(hosts as string[]);

    const ns = ing.metadata.namespace;
    const path = ing.spec?.rules?.[0]?.http?.paths[0];
    const backend = path?.backend.service;
    const svcDoc = find(docs, "Service", backend?.name ?? "");
    expect(svcDoc.metadata.namespace).toBe(ns);
    const svc = parseObject("Service", svcDoc);
    if (!svc.ok) throw new Error(svc.diagnostic.message);
    const sp = svc.object.spec?.ports?.find((p) => p.name === backend?.port?.name);
    expect(sp).toBeDefined();

    const dep = find<Manifest & { spec: { template: PodTemplate } }>(docs, "Deployment", "echo");
    expect(dep.metadata.namespace).toBe(ns);
    const labels = dep.spec.template.metadata.labels;
    const selector = (svcDoc as Manifest & { spec: { selector: Record<string, string> } }).spec.selector;
    expect(Object.entries(selector).every(([k, v]) => labels[k] === v)).toBe(true);
    const containerPorts = dep.spec.template.spec.containers.flatMap((c) => c.ports ?? []);
    expect(containerPorts.some((p) => p.name === sp?.targetPort || p.containerPort === sp?.targetPort)).toBe(true);
  });

  test("the TLS Secret is documented, not shipped (no private key in the repository)", () => {
    expect(docs.some((l) => l.doc.kind === "Secret")).toBe(false);
    const text = readFileSync(join(DIR, "ingress.yaml"), "utf8");
    expect(text).toContain("kubectl -n portico-example create secret tls echo-tls --cert=tls.crt --key=tls.key");
  });

  test("the example app itself runs locked down (the namespace enforces the restricted profile)", () => {
    expect(find(docs, "Namespace", "portico-example").metadata.labels?.["pod-security.kubernetes.io/enforce"]).toBe("restricted");
    const pod = find<Manifest & { spec: { template: PodTemplate } }>(docs, "Deployment", "echo").spec.template.spec;
    expect(pod.securityContext?.runAsNonRoot).toBe(true);
    for (const c of pod.containers) {
      expect(c.securityContext?.allowPrivilegeEscalation).toBe(false);
      expect(c.securityContext?.capabilities).toEqual({ drop: ["ALL"] });
    }
  });

  test("kubectl kustomize builds it (skipped without kubectl)", () => {
    const kubectl = Bun.which("kubectl");
    if (!kubectl) return;
    const r = Bun.spawnSync([kubectl, "kustomize", DIR], { stdout: "pipe", stderr: "pipe", timeout: 20_000 });
    expect(r.exitCode).toBe(0);
    expect((r.stdout.toString().match(/^kind: .+$/gm) ?? []).length).toBe(docs.length);
  });
});
