// The logger kube/ needs: src/log/ provides one with this shape (createLogger).
export interface KubeLogger {
  debug(msg: string, fields?: Record<string, unknown>): void;
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
}

export const silentLogger: KubeLogger = { debug() {}, info() {}, warn() {}, error() {} };
