// The scanner's answer to a gRPC Ping, read as StackRox's client reads it: scannerV1.PongMessage
// (stackrox/scanner proto/scanner/api/v1/ping_service.proto: `string status = 1;
// string scanner_version = 2;`), decoded by the rules of protobuf-go, which grpc-go's codec runs.
import { isUtf8 } from 'node:buffer';

export interface Pong {
  status: string;
  scannerVersion: string;
}

/** protobuf-go's bounds: field numbers of a message, of a field inside a group, and groups nested. */
const MAX_FIELD_NUMBER = 0x1fffffff;
const MAX_GROUP_FIELD_NUMBER = 0x7fffffff;
const MAX_GROUP_DEPTH = 10_000;

/**
 * The PongMessage in `bytes`, or why it is none. As protobuf-go: fields it does not know (and its
 * own fields sent with another wire type) are skipped, the last of a repeated field wins, an empty
 * message is a PongMessage whose fields are empty; a truncated or overlong varint, a length past
 * the end, a field number out of range, wire type 6 or 7, an unmatched end of group, or a string
 * that is not UTF-8 (proto3 strings are checked) is an error.
 */
export function decodePong(bytes: Uint8Array): Pong | string {
  const pong: Pong = { status: '', scannerVersion: '' };
  const groups: number[] = []; // the field numbers of the groups open, innermost last
  let at = 0;
  while (at < bytes.length) {
    const tag = varint(bytes, at);
    if (typeof tag === 'string') return tag;
    at = tag.end;
    const number = Math.floor(tag.value / 8);
    const type = tag.value % 8;
    if (number < 1 || number > (groups.length > 0 ? MAX_GROUP_FIELD_NUMBER : MAX_FIELD_NUMBER)) return `field number ${number} is out of range`;
    switch (type) {
      case 0: {
        const value = varint(bytes, at);
        if (typeof value === 'string') return value;
        at = value.end;
        break;
      }
      case 1:
      case 5: {
        const size = type === 1 ? 8 : 4;
        if (at + size > bytes.length) return `field ${number} is cut short`;
        at += size;
        break;
      }
      case 2: {
        const length = varint(bytes, at);
        if (typeof length === 'string') return length;
        if (length.value > bytes.length - length.end) return `field ${number} is longer than the message`;
        const start = length.end;
        at = start + length.value;
        if (groups.length === 0 && (number === 1 || number === 2)) {
          const value = bytes.subarray(start, at);
          if (!isUtf8(value)) return `${number === 1 ? 'status' : 'scanner_version'} is not UTF-8`;
          const text = Buffer.from(value.buffer, value.byteOffset, value.length).toString('utf8');
          if (number === 1) pong.status = text;
          else pong.scannerVersion = text;
        }
        break;
      }
      case 3:
        if (groups.length === MAX_GROUP_DEPTH) return `groups nest deeper than ${MAX_GROUP_DEPTH}`;
        groups.push(number);
        break;
      case 4:
        if (groups.at(-1) !== number) return `an end of group ${number} that no group opened`;
        groups.pop();
        break;
      default:
        return `field ${number} has wire type ${type}, which does not exist`;
    }
  }
  if (groups.length > 0) return `group ${groups.at(-1)} is not closed`;
  return pong;
}

/** A varint at `at` (at most 10 bytes, the tenth at most 1), or why it is none. */
function varint(bytes: Uint8Array, at: number): { value: number; end: number } | string {
  let value = 0;
  for (let i = 0; i < 10; i++) {
    if (at + i >= bytes.length) return 'a varint is cut short';
    const byte = bytes[at + i];
    if (i === 9 && byte > 1) return 'a varint overflows 64 bits';
    // Past 2^53 the value is no longer exact, and no longer matters: it is past every bound here.
    value += (byte & 0x7f) * 2 ** (7 * i);
    if (byte < 0x80) return { value, end: at + i + 1 };
  }
  return 'a varint overflows 64 bits';
}
