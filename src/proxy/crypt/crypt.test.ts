// Every hash format nginx's auth_basic accepts, against the tools that write them: fixed
// vectors (generated with the commands quoted, apache2-utils 2.4.71 and OpenSSL 3.0.19), and
// fresh ones from htpasswd / openssl when they are installed (skipped, not failed, without them).
import { describe, expect, test } from "bun:test";
import { createCipheriv, createHash, randomBytes } from "node:crypto";
import { checkHash, type HashFormat } from "../../policy/htpasswd.ts";
import { constantTimeEqual, desBlock, desCrypt, desSchedule, md5Crypt, sha1Hash, shaCrypt, sshaHash, verifyPassword } from "./crypt.ts";

const bytes = (s: string) => Buffer.from(s, "latin1");
const PW = "correct horse";

// Each generated with the password "correct horse".
const FIXED: readonly [HashFormat, string, string][] = [
  ["apr1", "htpasswd -bnm u 'correct horse'", "$apr1$4AnNRE9J$d4hRP9WCAe0ScT44Y2Ms71"],
  ["bcrypt", "htpasswd -bnBC 5 u 'correct horse'", "$2y$05$SdCcB4.W04SgvFo3Lpx9k.4wZA22Br4rguNXdjKRzGANllzeN6gjW"],
  ["sha1", "htpasswd -bns u 'correct horse'", "{SHA}L55TUjtiq8FBorTWAZ0jy6g129A="],
  ["des", "htpasswd -bnd u 'correct horse' (crypt(3) uses the first 8 bytes)", "8xPn5uXt1awlk"],
  ["sha256-crypt", "htpasswd -bn2 u 'correct horse'", "$5$dckq/V8jvL5wluJs$IZiRIH4u4T5XTanVJ3UGOQGXRLVECRIjIQW9LupAyK."],
  ["sha512-crypt", "htpasswd -bn5 u 'correct horse'", "$6$tT3LD4NgSxw2EavM$yo41WdndX2ZnoBHoQ5dmJcrWVrNMymg5o.2OGbU0H1JSYRJ6IgWR2qbvYNcQC5iNTzYnLVno9OZzno8Zvsn/5."],
  ["md5-crypt", "openssl passwd -1 -salt Xy7/.pQ1 'correct horse'", "$1$Xy7/.pQ1$gL1Xq7hTHSgHmoAC1Esgq0"],
  ["sha512-crypt", "openssl passwd -6 -salt 'rounds=1200$abcdefgh' 'correct horse'", "$6$rounds=1200$abcdefgh$NsyuErxstb3qoHTNsOnlsUAt74FRGOmV0sgaKWEFcw.fA0FC0Y1LLipjLc6/96SNitLhVfyOLA2I/ah0CUZer."],
  ["ssha", "python3: base64(sha1(b'correct horse' + s) + s), s = b'\\x01\\x02salt!'", "{SSHA}Esl9unbiaVIS2xIpROBDhLoIbzABAnNhbHQh"],
  ["plain", "written by hand (nginx's {PLAIN} scheme)", "{PLAIN}correct horse"],
];

describe("fixed vectors", () => {
  for (const [format, command, hash] of FIXED) {
    test(`${format}: ${command}`, async () => {
      expect(checkHash(hash).format).toBe(format);
      expect(await verifyPassword(bytes(PW), hash, format)).toBe(true);
      // Wrong in the last byte, empty, another case, a trailing space, a prefix: DES reads the
      // first 8 bytes only, so the two that keep "correct " pass there, as in crypt(3).
      for (const wrong of ["correct horsf", "", "Correct horse", `${PW} `, "correct"]) {
        const same8 = wrong.length >= 8 && wrong.slice(0, 8) === PW.slice(0, 8);
        expect(await verifyPassword(bytes(wrong), hash, format)).toBe(format === "des" && same8);
      }
    });
  }
});

// Vectors made now, by the tools, for passwords the fixed ones do not cover.
function tool(cmd: string[]): string | null {
  try {
    const r = Bun.spawnSync(cmd, { stdout: "pipe", stderr: "ignore" });
    return r.exitCode === 0 ? r.stdout.toString().trim() : null;
  } catch {
    return null;
  }
}
const hasHtpasswd = tool(["htpasswd", "-bnm", "u", "x"]) !== null;
const hasOpenssl = tool(["openssl", "passwd", "-1", "x"]) !== null;

// Spaces, colons, 8-bit bytes (argv is UTF-8: "été" is 5 bytes, each above 0x7f or ASCII), a long one.
const PASSWORDS = ["", "p", "pass word:with:colons", "\u00e9t\u00e9\u00ff", "x".repeat(100), randomBytes(12).toString("base64")];
const utf8 = (s: string) => Buffer.from(s, "utf8");

describe.if(hasHtpasswd)("htpasswd, live", () => {
  const flags: [string, HashFormat][] = [["-m", "apr1"], ["-B", "bcrypt"], ["-s", "sha1"], ["-d", "des"], ["-2", "sha256-crypt"], ["-5", "sha512-crypt"]];
  for (const [flag, format] of flags) {
    test(`htpasswd ${flag} (${format})`, async () => {
      for (const pw of PASSWORDS) {
        const line = tool(["htpasswd", "-bn", ...(flag === "-B" ? ["-B", "-C", "4"] : [flag]), "u", pw]);
        if (line === null) continue; // e.g. an empty password some modes refuse
        const hash = line.slice(line.indexOf(":") + 1);
        expect(checkHash(hash).format).toBe(format);
        expect(await verifyPassword(utf8(pw), hash, format)).toBe(true);
        // DES reads 8 bytes and bcrypt 72: a password longer than that matches with more after it.
        const reads = format === "des" ? 8 : format === "bcrypt" ? 72 : Number.POSITIVE_INFINITY;
        expect(await verifyPassword(utf8(`${pw}!`), hash, format)).toBe(utf8(pw).length >= reads);
      }
    });
  }
});

describe.if(hasOpenssl)("openssl passwd, live", () => {
  const flags: [string, HashFormat][] = [["-apr1", "apr1"], ["-1", "md5-crypt"], ["-5", "sha256-crypt"], ["-6", "sha512-crypt"]];
  for (const [flag, format] of flags) {
    test(`openssl passwd ${flag}`, async () => {
      for (const pw of PASSWORDS.filter((p) => p !== "")) {
        const hash = tool(["openssl", "passwd", flag, pw]) as string;
        expect(await verifyPassword(utf8(pw), hash, format)).toBe(true);
        expect(await verifyPassword(utf8(`${pw}!`), hash, format)).toBe(false);
      }
    });
  }
});

describe("what nginx and musl do at the edges", () => {
  test("bcrypt reads 72 bytes, as htpasswd and crypt() do (Bun alone would pre-hash a longer one)", async () => {
    // htpasswd -bnBC 4 u "$(printf 'a%.0s' $(seq 1 100))"
    const hash = "$2y$04$d5pCw/UlbnnDvlCjGVT3.ujLtuPeRB95Xytl9qYHFsqAFVol6cy0i";
    expect(await verifyPassword(bytes("a".repeat(100)), hash, "bcrypt")).toBe(true);
    expect(await verifyPassword(bytes("a".repeat(72)), hash, "bcrypt")).toBe(true);
    expect(await verifyPassword(bytes("a".repeat(71)), hash, "bcrypt")).toBe(false);
  });

  test("SHA-crypt: rounds under 1000 are computed as 1000, so the stored text never matches; too many or a bad spelling fail", () => {
    const good = shaCrypt(bytes("pw"), "$5$rounds=1000$salt$", 256) as string;
    expect(good.startsWith("$5$rounds=1000$salt$")).toBe(true);
    expect(shaCrypt(bytes("pw"), "$5$rounds=10$salt$", 256)).toBe(good);
    expect(shaCrypt(bytes("pw"), "$5$rounds=10000000$salt$", 256)).toBeNull();
    expect(shaCrypt(bytes("pw"), "$5$rounds=x$salt$", 256)).toBeNull();
    expect(shaCrypt(bytes("pw"), "$5$rounds=5", 256)).toBeNull(); // not ended by $
    expect(shaCrypt(bytes("pw"), "$5$rounds=$salt$", 256)).toBeNull();
    expect(shaCrypt(bytes("x".repeat(257)), "$6$salt$", 512)).toBeNull();
    expect(shaCrypt(bytes("x".repeat(256)), "$6$salt$", 512)).not.toBeNull();
    // The salt stops at 16 characters.
    expect((shaCrypt(bytes("pw"), "$6$0123456789abcdefXYZ$", 512) as string).startsWith("$6$0123456789abcdef$")).toBe(true);
  });

  test("MD5-crypt: the salt stops at 8 characters or a $, so a longer stored salt never matches", () => {
    const h = md5Crypt(bytes("pw"), "$apr1$abcdefghij$whatever", "$apr1$");
    expect(h.startsWith("$apr1$abcdefgh$")).toBe(true);
    expect(md5Crypt(bytes("pw"), h, "$apr1$")).toBe(h);
  });

  test("{SSHA} that does not decode, or decodes short, has no salt (no match for the stored text)", () => {
    expect(sshaHash(bytes("pw"), "{SSHA}!!!")).toBe(`{SSHA}${createHash("sha1").update("pw").digest("base64")}`);
    expect(sshaHash(bytes("pw"), "{SSHA}AAAA")).toBe(sha1Hash(bytes("pw")).replace("{SHA}", "{SSHA}"));
  });

  test("DES: the first 8 bytes, 7 bits each; a NUL ends the key", () => {
    expect(desCrypt(bytes("password"), "ab")).toBe(desCrypt(bytes("password-and-more"), "ab"));
    expect(desCrypt(bytes("pass\u0000word"), "ab")).toBe(desCrypt(bytes("pass"), "ab"));
    expect(desCrypt(bytes("\u00e1"), "ab")).toBe(desCrypt(bytes("a"), "ab")); // 0xe1 and 0x61 share their low 7 bits
  });

  test("the DES core is DES: held to node:crypto's des-ecb on random keys and blocks", () => {
    const bits = (b: Uint8Array) => [...b].flatMap((x) => [7, 6, 5, 4, 3, 2, 1, 0].map((i) => (x >> i) & 1));
    for (let i = 0; i < 20; i++) {
      const key = randomBytes(8);
      const block = randomBytes(8);
      const c = createCipheriv("des-ecb", key, null).setAutoPadding(false);
      const want = Buffer.concat([c.update(block), c.final()]);
      expect(desBlock(bits(block), desSchedule(bits(key))).join("")).toBe(bits(want).join(""));
    }
  });

  test("constantTimeEqual compares whole strings of any lengths", () => {
    expect(constantTimeEqual("abc", "abc")).toBe(true);
    expect(constantTimeEqual("abc", "abd")).toBe(false);
    expect(constantTimeEqual("abc", "abcd")).toBe(false);
    expect(constantTimeEqual("", "")).toBe(true);
  });

  test("bcrypt of the empty password matches the empty password only, as crypt() does", async () => {
    // htpasswd -bnBC 4 u ''
    const hash = "$2y$04$YOleJGU3sh7RPnvNCN7StOteRVYbwJViRCIfyxhzMzyJvUW8KdOva";
    expect(await verifyPassword(bytes(""), hash, "bcrypt")).toBe(true);
    expect(await verifyPassword(bytes(" "), hash, "bcrypt")).toBe(false);
    expect(await verifyPassword(bytes("x"), hash, "bcrypt")).toBe(false);
  });

  test("a malformed bcrypt hash is a mismatch, not a crash", async () => {
    expect(await verifyPassword(bytes("pw"), "$2y$05$tooshort", "bcrypt")).toBe(false);
  });
});
