// Shared by the listener (its idle timeout) and the handler (per-request timer), kept apart so
// neither imports the other.

/**
 * Keep-alive idle timeout in seconds. 75 s (nginx's keepalive_timeout) outlives the 60 s idle
 * timeout of common cloud load balancers, so we never close a connection they are about to
 * reuse. Requests in progress get their own value from server.timeout() in the handler.
 */
export const IDLE_TIMEOUT_S = 75;
