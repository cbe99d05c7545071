/**
 * What the Node client and the browser inspector share: operation builders ({@link op}), values
 * as people read them ({@link show}), and a rejected call's standard error details
 * ({@link problem}). Nothing here needs Node or a DOM.
 */
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import {
  BadRequestSchema,
  ErrorInfoSchema,
  PreconditionFailureSchema,
  ResourceInfoSchema,
} from "../gen/google/rpc/error_details_pb.js";
import {
  ErrorInfoSchema as DiagnosticsSchema,
  OperationSchema,
  type Diagnostic,
  type Operation,
  type Value,
} from "../gen/sheetd/v1/sheetd_pb.js";

/** An exact decimal, as text (`"2.5"`, `"-3"`): sent as a number without passing through a float. */
export class Decimal {
  constructor(readonly text: string) {}
}

/** A value to send: a number, an exact {@link Decimal}, a boolean or a text. */
export type Input = string | number | boolean | Decimal;

function value(v: Input): Value {
  const kind =
    typeof v === "boolean"
      ? { case: "boolean" as const, value: v }
      : typeof v === "number"
        ? { case: "number" as const, value: String(v) }
        : v instanceof Decimal
          ? { case: "number" as const, value: v.text }
          : { case: "text" as const, value: v };
  return { $typeName: "sheetd.v1.Value", format: "", kind };
}

/** The operations of docs/ruleset-format.md#sheets, as messages. */
export const op = {
  addObject(kind: string, key: string, id?: string, parent?: string): Operation {
    return create(OperationSchema, { op: { case: "addObject", value: { kind, key, id, parent } } });
  },
  removeObject(id: string): Operation {
    return create(OperationSchema, { op: { case: "removeObject", value: id } });
  },
  setInput(channel: string, v: Input, on?: string): Operation {
    return create(OperationSchema, { op: { case: "setInput", value: { channel, on, value: value(v) } } });
  },
};

/** A value as people read it: `17`, `true`, `1d8`, `[1, 2]`, or its error. */
export function show(v: Value | undefined): string {
  switch (v?.kind.case) {
    case undefined:
      return "(none)";
    case "number":
    case "text":
      return v.kind.value;
    case "boolean":
      return String(v.kind.value);
    case "list":
      return `[${v.kind.value.items.map(show).join(", ")}]`;
    case "error":
      return `error: ${v.kind.value.message} [${v.kind.value.code}]`;
  }
}

/** What a rejected call said, from its standard details. */
export interface Problem {
  /** The gRPC code's name: `aborted`, `invalid_argument`, … */
  code: string;
  message: string;
  /** ErrorInfo's stable reason (`sheet.revision_conflict`) and metadata. */
  reason: string;
  metadata: Record<string, string>;
  /** PreconditionFailure's violations: `REVISION` on `sheets/hero`, … */
  violations: { type: string; subject: string; description: string }[];
  /** BadRequest's field violations. */
  fields: { field: string; description: string }[];
  /** ResourceInfo: which resource was missing or taken. */
  resource?: { type: string; name: string };
  /** sheetd's diagnostics: code, message, where (file:line:col, operation, formula span). */
  diagnostics: Diagnostic[];
}

/** Reads a rejected call's error; anything that is not a ConnectError is rethrown. */
export function problem(e: unknown): Problem {
  const err = ConnectError.from(e);
  const info = err.findDetails(ErrorInfoSchema)[0];
  const resource = err.findDetails(ResourceInfoSchema)[0];
  return {
    code: Code[err.code].replace(/([a-z])([A-Z])/g, "$1_$2").toLowerCase(),
    message: err.rawMessage,
    reason: info?.reason ?? "",
    metadata: { ...(info?.metadata ?? {}) },
    violations: err
      .findDetails(PreconditionFailureSchema)
      .flatMap((p) => p.violations.map(({ type, subject, description }) => ({ type, subject, description }))),
    fields: err
      .findDetails(BadRequestSchema)
      .flatMap((b) => b.fieldViolations.map(({ field, description }) => ({ field, description }))),
    resource: resource && { type: resource.resourceType, name: resource.resourceName },
    diagnostics: err.findDetails(DiagnosticsSchema).flatMap((d) => d.diagnostics),
  };
}
