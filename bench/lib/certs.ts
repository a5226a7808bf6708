// One self-signed RSA-2048 certificate (ingress-nginx's default key type) for the TLS scenario.
import { join } from "node:path";

export interface CertFiles {
  readonly certFile: string;
  readonly keyFile: string;
  readonly cert: string;
  readonly key: string;
}

export async function makeCert(openssl: string, dir: string, name = "bench.local"): Promise<CertFiles> {
  if (!/^[a-z0-9.*-]+$/.test(name)) throw new Error(`bad certificate name ${name}`);
  const certFile = join(dir, "tls.crt");
  const keyFile = join(dir, "tls.key");
  const p = Bun.spawn(
    [
      openssl, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-sha256", "-days", "2",
      "-subj", `/CN=${name}`, "-addext", `subjectAltName=DNS:${name}`,
      "-keyout", keyFile, "-out", certFile,
    ],
    { stdout: "ignore", stderr: "pipe" },
  );
  const code = await p.exited;
  if (code !== 0) throw new Error(`openssl req exited ${code}: ${await new Response(p.stderr).text()}`);
  return { certFile, keyFile, cert: await Bun.file(certFile).text(), key: await Bun.file(keyFile).text() };
}
