// OpenSSL cipher strings as OpenSSL 3 reads them (openssl-ciphers(1), ssl/ssl_ciph.c), over the
// TLS 1.2 suites Portico serves. The expected lists are `openssl ciphers -tls1_2 '<string>'` of
// OpenSSL 3.0.19 restricted to those suites; where the machine has an `openssl` binary the last
// test compares against it directly.
import { describe, expect, test } from "bun:test";
import { getCiphers } from "node:tls";
import { parseCipherList, SERVABLE_TLS12_SUITES, MAX_CIPHER_STRING } from "./cipher-list.ts";
import { seeded } from "../../test/proxy/seeded.ts";

const ECDHE_AEAD = ["ECDHE-ECDSA-AES256-GCM-SHA384", "ECDHE-RSA-AES256-GCM-SHA384", "ECDHE-ECDSA-CHACHA20-POLY1305", "ECDHE-RSA-CHACHA20-POLY1305", "ECDHE-ECDSA-AES128-GCM-SHA256", "ECDHE-RSA-AES128-GCM-SHA256"];
const ECDHE_CBC = ["ECDHE-ECDSA-AES128-SHA256", "ECDHE-RSA-AES128-SHA256", "ECDHE-ECDSA-AES256-SHA", "ECDHE-RSA-AES256-SHA", "ECDHE-ECDSA-AES128-SHA", "ECDHE-RSA-AES128-SHA"];
const RSA_KX = ["AES256-GCM-SHA384", "AES128-GCM-SHA256", "AES256-SHA", "AES128-SHA"];
const ALL = [...ECDHE_AEAD, ...ECDHE_CBC, ...RSA_KX];

const list = (s: string): readonly string[] | string => {
  const r = parseCipherList(s);
  return "value" in r ? r.value.split(":") : r.message;
};

test("every suite evaluation can yield is one BoringSSL (node:tls) has, as a TLS 1.2 suite", () => {
  const known = new Set(getCiphers());
  expect(SERVABLE_TLS12_SUITES.filter((n) => !known.has(n.toLowerCase()))).toEqual([]);
  expect(SERVABLE_TLS12_SUITES).toEqual(ALL);
});

describe("the strings ingress-nginx users write", () => {
  test("HIGH:!aNULL:!MD5 (nginx's own ssl_ciphers default): every suite, in OpenSSL's order", () => {
    expect(list("HIGH:!aNULL:!MD5")).toEqual(ALL);
  });
  test("ECDHE+AESGCM:!SHA1: ECDHE with AES-GCM, AES-256 first", () => {
    expect(list("ECDHE+AESGCM:!SHA1")).toEqual(["ECDHE-ECDSA-AES256-GCM-SHA384", "ECDHE-RSA-AES256-GCM-SHA384", "ECDHE-ECDSA-AES128-GCM-SHA256", "ECDHE-RSA-AES128-GCM-SHA256"]);
  });
  test("DEFAULT (proxy-ssl-ciphers' default): OpenSSL's ALL:!COMPLEMENTOFDEFAULT:!eNULL", () => {
    expect(list("DEFAULT")).toEqual(ALL);
    expect(list("DEFAULT:!kRSA")).toEqual([...ECDHE_AEAD, ...ECDHE_CBC]);
    // Only at the start: elsewhere DEFAULT is a word OpenSSL does not know.
    expect(list("ECDHE+CHACHA20:DEFAULT")).toEqual(["ECDHE-ECDSA-CHACHA20-POLY1305", "ECDHE-RSA-CHACHA20-POLY1305"]);
  });
  test("the Go e2e test's value (settings/ssl_ciphers.go): EXPORT56, RC4, SSLv2 and EXP are not in OpenSSL 3 and are skipped", () => {
    const r = parseCipherList("ALL:!aNULL:!EXPORT56:RC4+RSA:+HIGH:+MEDIUM:+LOW:+SSLv2:+EXP");
    expect("value" in r ? r.value.split(":") : r.message).toEqual(ALL);
    expect("value" in r ? r.unknown : null).toEqual(["EXPORT56", "RC4", "SSLv2", "EXP"]);
  });
  test("ingress-nginx's default list (config.go sslCiphers): its DHE suites select nothing Portico serves", () => {
    expect(list("ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384:ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305:DHE-RSA-AES128-GCM-SHA256:DHE-RSA-AES256-GCM-SHA384")).toEqual([
      "ECDHE-ECDSA-AES128-GCM-SHA256", "ECDHE-RSA-AES128-GCM-SHA256", "ECDHE-ECDSA-AES256-GCM-SHA384", "ECDHE-RSA-AES256-GCM-SHA384", "ECDHE-ECDSA-CHACHA20-POLY1305", "ECDHE-RSA-CHACHA20-POLY1305",
    ]);
  });
});

describe("OpenSSL's rule operators", () => {
  test("! removes for good, - only until a later rule adds back, + moves to the end", () => {
    expect(list("ALL:!kRSA:kRSA")).toEqual([...ECDHE_AEAD, ...ECDHE_CBC]);
    // `-` puts the removed suites first for a later add, in their order.
    expect(list("ALL:-kRSA:kRSA")).toEqual([...ECDHE_AEAD, ...ECDHE_CBC, ...RSA_KX]);
    expect(list("kRSA:-ALL:ECDHE+CHACHA20:kRSA")).toEqual(["ECDHE-ECDSA-CHACHA20-POLY1305", "ECDHE-RSA-CHACHA20-POLY1305", ...RSA_KX]);
    expect(list("ALL:+AESGCM")).toEqual(["ECDHE-ECDSA-CHACHA20-POLY1305", "ECDHE-RSA-CHACHA20-POLY1305", ...ECDHE_CBC, "AES256-SHA", "AES128-SHA", "ECDHE-ECDSA-AES256-GCM-SHA384", "ECDHE-RSA-AES256-GCM-SHA384", "ECDHE-ECDSA-AES128-GCM-SHA256", "ECDHE-RSA-AES128-GCM-SHA256", "AES256-GCM-SHA384", "AES128-GCM-SHA256"]);
  });
  test("A+B selects what both select; separators : , ; and space; no separator needed before a prefix", () => {
    expect(list("aRSA+AES128+SHA1")).toEqual(["ECDHE-RSA-AES128-SHA", "AES128-SHA"]);
    expect(list("ECDHE+AES256+SHA1, kRSA+AESGCM;CHACHA20+aECDSA")).toEqual(["ECDHE-ECDSA-AES256-SHA", "ECDHE-RSA-AES256-SHA", "AES256-GCM-SHA384", "AES128-GCM-SHA256", "ECDHE-ECDSA-CHACHA20-POLY1305"]);
    expect(list("HIGH!aECDSA!kRSA!SHA1!SHA256")).toEqual(["ECDHE-RSA-AES256-GCM-SHA384", "ECDHE-RSA-CHACHA20-POLY1305", "ECDHE-RSA-AES128-GCM-SHA256"]);
    // Two classes of one kind that share nothing select nothing (OpenSSL: the rule is skipped).
    expect(list("HIGH+FIPS:ECDHE-RSA-AES128-SHA")).toEqual(["ECDHE-RSA-AES128-SHA"]);
  });
  test("aliases: TLSv1.2 and SSLv3 are a suite's lowest version, SHA256/SHA384 MACs, FIPS without CHACHA20", () => {
    expect(list("TLSv1.2+kRSA")).toEqual(["AES256-GCM-SHA384", "AES128-GCM-SHA256"]);
    expect(list("SSLv3")).toEqual(["AES256-SHA", "AES128-SHA"]);
    expect(list("TLSv1")).toEqual(["ECDHE-ECDSA-AES256-SHA", "ECDHE-RSA-AES256-SHA", "ECDHE-ECDSA-AES128-SHA", "ECDHE-RSA-AES128-SHA"]);
    expect(list("SHA256")).toEqual(["ECDHE-ECDSA-AES128-SHA256", "ECDHE-RSA-AES128-SHA256"]);
    expect(list("FIPS+ECDHE+aRSA+AEAD")).toEqual("no suite Portico can serve: the string selects none of its TLS 1.2 suites (ECDHE or RSA key exchange with AES or CHACHA20-POLY1305; finite-field DHE, CAMELLIA, ARIA, CCM, 3DES and PSK suites are never offered)");
    expect(list("FIPS+ECDHE+aRSA+AESGCM")).toEqual(["ECDHE-RSA-AES256-GCM-SHA384", "ECDHE-RSA-AES128-GCM-SHA256"]);
  });
  test("@STRENGTH sorts by key length, keeping the order within a length; @SECLEVEL drops what the level refuses", () => {
    expect(list("AES128:CHACHA20:AES256:@STRENGTH")).toEqual([
      "ECDHE-ECDSA-CHACHA20-POLY1305", "ECDHE-RSA-CHACHA20-POLY1305", "ECDHE-ECDSA-AES256-GCM-SHA384", "ECDHE-RSA-AES256-GCM-SHA384", "ECDHE-ECDSA-AES256-SHA", "ECDHE-RSA-AES256-SHA", "AES256-GCM-SHA384", "AES256-SHA",
      "ECDHE-ECDSA-AES128-GCM-SHA256", "ECDHE-RSA-AES128-GCM-SHA256", "ECDHE-ECDSA-AES128-SHA256", "ECDHE-RSA-AES128-SHA256", "ECDHE-ECDSA-AES128-SHA", "ECDHE-RSA-AES128-SHA", "AES128-GCM-SHA256", "AES128-SHA",
    ]);
    // Level 3: forward secrecy only; level 4: 192 bits or more, no SHA-1 MAC.
    expect(list("@SECLEVEL=3:ALL")).toEqual([...ECDHE_AEAD, ...ECDHE_CBC]);
    expect(list("ALL:@SECLEVEL=4")).toEqual(["ECDHE-ECDSA-AES256-GCM-SHA384", "ECDHE-RSA-AES256-GCM-SHA384", "ECDHE-ECDSA-CHACHA20-POLY1305", "ECDHE-RSA-CHACHA20-POLY1305"]);
  });
  test("Suite B keywords replace the whole string (RFC 6460)", () => {
    expect(list("SUITEB128:ALL")).toEqual(["ECDHE-ECDSA-AES128-GCM-SHA256", "ECDHE-ECDSA-AES256-GCM-SHA384"]);
    expect(list("SUITEB192")).toEqual(["ECDHE-ECDSA-AES256-GCM-SHA384"]);
  });
  test("names are case-sensitive, as OpenSSL's: a lower-case alias is an unknown word", () => {
    expect(list("high:ECDHE-RSA-AES128-SHA")).toEqual(["ECDHE-RSA-AES128-SHA"]);
  });
  test("a later alias's strength class replaces COMPLEMENTOFDEFAULT's mark, as OpenSSL assigns it (ssl_cipher_process_rulestr)", () => {
    // openssl ciphers 3.0.19: COMPLEMENTOFDEFAULT+HIGH selects every HIGH suite, default or not.
    expect(list("COMPLEMENTOFDEFAULT+HIGH")).toEqual(ALL);
    expect(list("COMPLEMENTOFDEFAULT+ECDHE-ECDSA-CHACHA20-POLY1305")).toEqual(["ECDHE-ECDSA-CHACHA20-POLY1305"]);
    // In the other order COMPLEMENTOFDEFAULT's mark is added, so it still narrows.
    expect(list("HIGH+COMPLEMENTOFDEFAULT")).toStartWith("no suite Portico can serve");
  });
  test("a suite OpenSSL has but Portico does not serve is a word OpenSSL knows: reading goes on at the next character", () => {
    // AES128-SHA256 (BoringSSL lacks it) ends at `!`, which starts a rule of its own.
    expect(list("ALL:AES128-SHA256!ECDHE")).toEqual(RSA_KX);
    expect(list("ALL:CAMELLIA128-SHA!kRSA")).toEqual([...ECDHE_AEAD, ...ECDHE_CBC]);
    // Its classes narrow `A+B` as OpenSSL's do: DHE-RSA-AES128-GCM-SHA256+aRSA selects only it.
    expect(list("DHE-RSA-AES128-GCM-SHA256+aRSA:AES128-SHA")).toEqual(["AES128-SHA"]);
    const r = parseCipherList("AES128-SHA256:AES128-SHA");
    expect("value" in r ? [r.value, r.unknown] : r.message).toEqual(["AES128-SHA", []]);
  });
});

describe("what nginx would refuse after a suite name Portico does not serve", () => {
  // openssl ciphers 3.0.19 answers "invalid command" for each: the word is known, so `+*` is read.
  for (const s of ["ECDHE-RSA-AES128-SHA:DHE-RSA-AES128-GCM-SHA256+*", "ECDHE-RSA-AES128-SHA:EDH-RSA-DES-CBC3-SHA+*", "ECDHE-RSA-AES128-SHA:EDH-DSS-DES-CBC3-SHA+*", "AES128-SHA:ECDHE-ECDSA-AES128-CCM+!x"]) {
    test(s, () => {
      const r = parseCipherList(s);
      expect("message" in r && r.syntax).toBe(true);
    });
  }
  test("the EDH- aliases alone select nothing, and are not unknown words", () => {
    const r = parseCipherList("EDH-RSA-DES-CBC3-SHA:EDH-DSS-DES-CBC3-SHA:AES128-SHA");
    expect("value" in r ? [r.value, r.unknown] : r.message).toEqual(["AES128-SHA", []]);
  });
});

describe("what nginx would refuse is refused", () => {
  const refused: [string, string][] = [
    ["HIGH:%x", 'invalid character "%" at 6'],
    ["!", "a rule ends without a word at 2"],
    ["HIGH+", "a rule ends without a word at 6"],
    ["HIGH:@FAST", "unknown command @FAST"],
    ["@SECLEVEL=7:HIGH", "unknown command @SECLEVEL=7"],
    ["", "no suite Portico can serve"],
    ["RC4:3DES:MEDIUM:LOW:CAMELLIA:DHE", "no suite Portico can serve"],
    ["TLS_AES_128_GCM_SHA256", "TLS 1.3 suite TLS_AES_128_GCM_SHA256 cannot be chosen"],
    ["x".repeat(MAX_CIPHER_STRING + 1), `longer than ${MAX_CIPHER_STRING} characters`],
  ];
  for (const [s, message] of refused) {
    test(JSON.stringify(s.slice(0, 40)), () => {
      const r = parseCipherList(s);
      expect("message" in r ? r.message : r.value).toStartWith(message);
    });
  }
});

test("total: random strings never throw, and give either a message or servable names without repeats", () => {
  const alphabet = "HIGHMEDIUMLOWaNULLeNULLECDHERSAAESGCMSHA1256384@STRENGTHSECLEVEL=3!+-:,; _.%\u00e9\u0000\n";
  const words = ["HIGH", "ALL", "DEFAULT", "ECDHE", "kRSA", "AESGCM", "CHACHA20", "SHA1", "@STRENGTH", "@SECLEVEL=3", "COMPLEMENTOFDEFAULT", "ECDHE-RSA-AES128-SHA", "TLSv1.2", "FIPS"];
  const rand = seeded(12345);
  const rnd = (n: number): number => Math.floor(rand() * n);
  const servable = new Set(SERVABLE_TLS12_SUITES);
  for (let k = 0; k < 5000; k++) {
    let s = "";
    const len = rnd(40);
    for (let j = 0; j < len; j++) s += rnd(3) === 0 ? words[rnd(words.length)] : alphabet[rnd(alphabet.length)];
    const r = parseCipherList(s);
    if ("message" in r) expect(typeof r.message).toBe("string");
    else {
      const names = r.value.split(":");
      expect(names.every((n) => servable.has(n))).toBe(true);
      expect(new Set(names).size).toBe(names.length);
    }
  }
});

// The same strings through the machine's OpenSSL 3, when it has one: its list restricted to the
// suites Portico serves must be ours, and a string it refuses for its syntax must be refused.
const openssl = Bun.which("openssl");
const opensslVersion = openssl === null ? "" : Bun.spawnSync([openssl, "version"]).stdout.toString();
test.skipIf(!opensslVersion.startsWith("OpenSSL 3."))("agrees with `openssl ciphers` on 600 random strings", () => {
  const words = ["ALL", "COMPLEMENTOFALL", "COMPLEMENTOFDEFAULT", "kRSA", "aRSA", "RSA", "ECDHE", "EECDH", "kEECDH", "aECDSA", "ECDSA", "AES", "AES128", "AES256", "AESGCM", "CHACHA20", "SHA", "SHA1", "SHA256", "SHA384", "MD5", "RC4", "3DES", "EXP", "SSLv3", "TLSv1", "TLSv1.2", "LOW", "MEDIUM", "HIGH", "FIPS", "CBC", "aNULL", "DHE", "CAMELLIA", "ECDHE-RSA-AES128-GCM-SHA256", "AES128-SHA", "AES256-GCM-SHA384", "@STRENGTH", "BOGUS",
    // Suites OpenSSL has and Portico does not serve, and the two EDH- aliases: words OpenSSL knows.
    "AES128-SHA256", "DHE-RSA-AES128-GCM-SHA256", "CAMELLIA128-SHA", "ECDHE-ECDSA-AES128-CCM", "ARIA256-GCM-SHA384", "NULL-SHA256", "PSK-AES128-CBC-SHA", "ADH-AES256-SHA", "ECDHE-RSA-CAMELLIA256-SHA384", "EDH-RSA-DES-CBC3-SHA", "EDH-DSS-DES-CBC3-SHA",
    "COMPLEMENTOFDEFAULT", "COMPLEMENTOFDEFAULT"];
  const prefixes = ["", "", "!", "-", "+"];
  const seps = [":", ",", " ", ";", "+", "+", "+-", "+!", "!", "-", "+*"];
  const rand = seeded(777);
  const rnd = (n: number): number => Math.floor(rand() * n);
  const servable = new Set(SERVABLE_TLS12_SUITES);
  for (let k = 0; k < 600; k++) {
    let s = k % 10 === 0 ? "DEFAULT" : "";
    const len = 1 + rnd(5);
    for (let j = 0; j < len; j++) s += (s === "" ? "" : seps[rnd(seps.length)]!) + prefixes[rnd(prefixes.length)]! + words[rnd(words.length)]!;
    // A leading separator is a no-op, and keeps the command line from reading `-x` as an option.
    const run = Bun.spawnSync([openssl!, "ciphers", "-tls1_2", s.startsWith("-") ? `:${s}` : s]);
    const ours = parseCipherList(s);
    if (run.exitCode !== 0) {
      expect("message" in ours, s).toBe(true);
      continue;
    }
    const theirs = run.stdout.toString().trim().split(":").filter((n) => servable.has(n));
    expect("value" in ours ? ours.value.split(":") : [], s).toEqual(theirs);
    // A string OpenSSL accepts is never refused for its syntax.
    if ("message" in ours) expect(ours.syntax, s).toBe(false);
  }
});
