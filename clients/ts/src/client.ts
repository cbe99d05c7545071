/**
 * A small typed wrapper over sheetd's generated Connect-ES client (docs/api.md).
 *
 * - {@link connect} opens a client over gRPC (HTTP/2) or grpc-web (HTTP/1.1), with a bearer
 *   token when the server has auth on.
 * - `op` builds the operations Apply and CreateSheet take, and `show` reads a value as people
 *   read it (numbers are exact decimals as text, never floats); `problem` reads a rejected
 *   call's standard error details (`google.rpc.ErrorInfo`, `PreconditionFailure`,
 *   `BadRequest`, `ResourceInfo`) and sheetd's own diagnostics (`values.ts`, shared with the
 *   browser inspector).
 *
 * Everything else is the generated API itself: `client.apply(…)`, `client.watch(…)`, with the
 * request and reply types of `gen/sheetd/v1/sheetd_pb.ts`.
 */
import { createClient, type Client, type Interceptor } from "@connectrpc/connect";
import { createGrpcTransport, createGrpcWebTransport } from "@connectrpc/connect-node";
import { SheetdService } from "../gen/sheetd/v1/sheetd_pb.js";

export * from "../gen/sheetd/v1/sheetd_pb.js";
export * from "./values.js";

/** How to reach the server: gRPC over HTTP/2, or grpc-web over HTTP/1.1 (what browsers speak). */
export type Protocol = "grpc" | "grpc-web";

export interface Options {
  /** `http://127.0.0.1:50051` (or https). */
  url: string;
  protocol?: Protocol;
  /** A bearer token, for a server with auth on (docs/api.md#roles). */
  token?: string;
}

/** The generated client of `sheetd.v1.SheetdService`. */
export type Sheetd = Client<typeof SheetdService>;

/** A client for the server at `o.url`. */
export function connect(o: Options): Sheetd {
  const interceptors: Interceptor[] = [];
  if (o.token) {
    const bearer = `Bearer ${o.token}`;
    interceptors.push((next) => (req) => {
      req.header.set("authorization", bearer);
      return next(req);
    });
  }
  const transport =
    o.protocol === "grpc-web"
      ? createGrpcWebTransport({ baseUrl: o.url, httpVersion: "1.1", interceptors })
      : createGrpcTransport({ baseUrl: o.url, interceptors });
  return createClient(SheetdService, transport);
}
