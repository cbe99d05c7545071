/**
 * The inspector's connection: the generated client over grpc-web to the server that served the
 * page, with the token the user gave, and errors turned into sentences for people.
 */
import { Code, ConnectError, createClient, type Client } from "@connectrpc/connect";
import { createGrpcWebTransport } from "@connectrpc/connect-web";
import { SheetdService } from "../gen/sheetd/v1/sheetd_pb.js";
import { problem } from "../src/values.js";

export type Sheetd = Client<typeof SheetdService>;

const TOKEN_KEY = "sheetd.token";

/** The token this tab was given (kept for the tab's life only). */
export function savedToken(): string {
  return sessionStorage.getItem(TOKEN_KEY) ?? "";
}

export function saveToken(token: string) {
  if (token) sessionStorage.setItem(TOKEN_KEY, token);
  else sessionStorage.removeItem(TOKEN_KEY);
}

/** A client of the server at `origin` (the page's own), sending `token` when there is one. */
export function connect(origin: string, token: string): Sheetd {
  const transport = createGrpcWebTransport({
    baseUrl: origin,
    interceptors: token
      ? [
          (next) => (req) => {
            req.header.set("authorization", `Bearer ${token}`);
            return next(req);
          },
        ]
      : [],
  });
  return createClient(SheetdService, transport);
}

/** What went wrong, for people: what happened, and what to do about it. */
export function readable(e: unknown, origin: string): string {
  if (!(e instanceof ConnectError) && !(e instanceof Error)) return String(e);
  const err = ConnectError.from(e);
  switch (err.code) {
    case Code.Unavailable:
    case Code.Unknown:
      if (/fetch|network|Failed|unavailable/i.test(err.rawMessage) || err.code === Code.Unavailable) {
        return `Cannot reach the server at ${origin}: is sheetd running? (${err.rawMessage})`;
      }
      break;
    case Code.Unauthenticated:
      return `This server needs a valid token: enter it above and press Connect. (${err.rawMessage})`;
    case Code.PermissionDenied:
      return `The token's role does not allow this: ${err.rawMessage}`;
    case Code.Canceled:
      return "The call was cancelled.";
    default:
      break;
  }
  const p = problem(err);
  const reason = p.reason ? ` [${p.reason}]` : "";
  const where = p.diagnostics.map((d) => d.message).filter((m) => m && m !== p.message);
  return `${p.message}${reason}${where.length ? ` — ${where.join("; ")}` : ""}`;
}
