// kubeconfig.ts reads kubeconfig files itself (client-node is not loaded at start-up): the
// fields it maps must be what @kubernetes/client-node's KubeConfig makes of the same file.
import { describe, expect, test } from "bun:test";
import { mkdirSync, writeFileSync } from "node:fs";
import { KubeConfig } from "@kubernetes/client-node";
import { resolveKubeConfig } from "../../src/kube/kubeconfig.ts";

const dir = `/tmp/portico-kubeconfig-${process.pid}`;
mkdirSync(`${dir}/certs`, { recursive: true });
writeFileSync(`${dir}/certs/ca.pem`, "CA PEM");

const KITCHEN_SINK = `apiVersion: v1
kind: Config
current-context: main
clusters:
- name: prod
  cluster:
    server: https://api.example.test:6443/
    certificate-authority: certs/ca.pem
    tls-server-name: kubernetes.default
    proxy-url: http://proxy.example.test:3128
- name: dev
  cluster: { server: "http://127.0.0.1:8001", insecure-skip-tls-verify: true, certificate-authority-data: ${Buffer.from("DEV CA").toString("base64")} }
users:
- name: admin
  user:
    client-certificate: certs/client.pem
    client-key: /abs/client-key.pem
    as: someone-else
- name: tokens
  user: { token: abc, username: u, password: p }
- name: plugin
  user:
    exec: { apiVersion: client.authentication.k8s.io/v1, command: ./get-token, args: [a, b] }
- name: oidc
  user:
    auth-provider: { name: oidc, config: { client-id: x, id-token: y } }
contexts:
- name: main
  context: { cluster: prod, user: admin, namespace: apps }
- name: dev-tokens
  context: { cluster: dev, user: tokens }
- name: dev-plugin
  context: { cluster: dev, user: plugin }
- name: dev-oidc
  context: { cluster: dev, user: oidc }
`;

function write(name: string, text: string): string {
  const path = `${dir}/${name}`;
  writeFileSync(path, text);
  return path;
}

describe("resolveKubeConfig", () => {
  const path = write("sink.yaml", KITCHEN_SINK);
  const kc = new KubeConfig();
  kc.loadFromFile(path);

  for (const context of ["main", "dev-tokens", "dev-plugin", "dev-oidc"]) {
    test(`context ${context}: the same cluster and user fields as client-node's KubeConfig`, () => {
      const rc = resolveKubeConfig({ kubeconfig: path, context });
      kc.setCurrentContext(context);
      const ctx = kc.getContextObject(context)!;
      const cluster = kc.getCluster(ctx.cluster)!;
      const user = kc.getUser(ctx.user)!;
      expect(rc.contextName).toBe(context);
      expect(rc.namespace).toBe(ctx.namespace ?? null);
      expect(rc.server).toBe(cluster.server);
      expect(rc.insecureSkipTLSVerify).toBe(cluster.skipTLSVerify);
      expect(rc.tlsServerName).toBe(cluster.tlsServerName ?? null);
      expect(rc.proxyUrl).toBe(cluster.proxyUrl ?? null);
      const pick = (u: object) => Object.fromEntries(Object.entries(u).filter(([, v]) => v !== undefined && v !== null));
      expect(pick(rc.user)).toEqual(pick(user));
      expect(pick(rc.cluster)).toEqual(pick(cluster));
    });
  }

  test("relative certificate paths resolve against the file's folder; the CA is read", () => {
    const rc = resolveKubeConfig({ kubeconfig: path, context: "main" });
    expect(rc.ca).toBe("CA PEM");
    expect(rc.user.certFile).toBe(`${dir}/certs/client.pem`);
    expect(rc.user.keyFile).toBe("/abs/client-key.pem");
    expect(rc.user.impersonateUser).toBe("someone-else");
    expect(rc.server).toBe("https://api.example.test:6443");
    expect(resolveKubeConfig({ kubeconfig: path, context: "dev-tokens" }).ca).toBe("DEV CA");
  });

  test("entries without a name, cluster or server fail with client-node's messages", () => {
    const cases: [string, RegExp][] = [
      ["clusters:\n- cluster: { server: x }\n", /clusters\[0\]\.name is missing/],
      ["clusters:\n- name: a\n", /clusters\[0\]\.cluster is missing/],
      ["clusters:\n- name: a\n  cluster: {}\n", /clusters\[0\]\.cluster\.server is missing/],
      ["users:\n- user: {}\n", /users\[0\]\.name is missing/],
      ["contexts:\n- name: c\n  context: { user: u }\n", /contexts\[0\]\.context\.cluster is missing/],
    ];
    for (const [text, message] of cases) {
      const p = write("bad.yaml", text);
      expect(() => resolveKubeConfig({ kubeconfig: p, context: null })).toThrow(message);
      expect(() => new KubeConfig().loadFromFile(p)).toThrow(message);
    }
  });

  test("no current context, or one naming a missing cluster, is a one-line error", () => {
    const none = write("none.yaml", "clusters:\n- name: a\n  cluster: { server: http://x }\n");
    expect(() => resolveKubeConfig({ kubeconfig: none, context: null })).toThrow(`kubeconfig ${none} has no current-context (it defines no contexts); pass --context`);
    const dangling = write("dangling.yaml", "current-context: c\ncontexts:\n- name: c\n  context: { cluster: gone }\n");
    expect(() => resolveKubeConfig({ kubeconfig: dangling, context: null })).toThrow(`kubeconfig ${dangling}: context c names cluster "gone", which has no server`);
  });

  test("a current-context naming a missing context says so, with the contexts there are", () => {
    const p = write("missing-ctx.yaml", "current-context: prod\nclusters:\n- name: a\n  cluster: { server: http://x }\ncontexts:\n- name: dev\n  context: { cluster: a }\n- name: stage\n  context: { cluster: a }\n");
    expect(() => resolveKubeConfig({ kubeconfig: p, context: null })).toThrow(`kubeconfig ${p}: current-context "prod" names no context (its contexts: dev, stage); pass --context`);
    expect(resolveKubeConfig({ kubeconfig: p, context: "stage" }).contextName).toBe("stage");
  });

  test("a malformed file is named in the error, on one line", () => {
    for (const [name, text] of [["broken.yaml", "clusters: [\n  - name: a\n"], ["tabs.yaml", "clusters:\n\t- name: a\n"], ["noname.yaml", "clusters:\n- cluster: { server: x }\n"]] as const) {
      const p = write(name, text);
      let message = "";
      try {
        resolveKubeConfig({ kubeconfig: p, context: null });
      } catch (e) {
        message = (e as Error).message;
      }
      expect(message).toStartWith(`kubeconfig ${p}: `);
      expect(message).not.toContain("\n");
    }
    // Through $KUBECONFIG too: the file at fault among several is the one named.
    const good = write("good.yaml", KITCHEN_SINK);
    const bad = write("bad-among.yaml", "contexts: {{{\n");
    expect(() => resolveKubeConfig({ kubeconfig: null, context: null }, { KUBECONFIG: `${good}:${bad}` })).toThrow(`kubeconfig ${bad}: `);
  });

  test("with nothing to find, the error names every way to give a source, --manifests included", () => {
    expect(() => resolveKubeConfig({ kubeconfig: null, context: null }, { HOME: `${dir}/empty-home` }, `${dir}/no-sa`)).toThrow(
      /--kubeconfig PATH, set \$KUBECONFIG, run in a pod, or create ~\/\.kube\/config; or serve YAML files with no cluster: --manifests PATH/,
    );
  });
});
