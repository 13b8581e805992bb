// Uploaded files and streamed bodies, used as the docs show them: each line must compile.
import { createHash } from 'node:crypto';
import { streamed } from 'funcrun';
import type { BodyStream, Context, Function, NamedFunction, UploadedFile } from 'funcrun';

export async function upload(context: Context, fields: Record<string, string | string[]>) {
  const files: readonly UploadedFile[] = context.files;
  const first = files[0];
  const bytes: Buffer = await first.bytes();
  const text: string = await first.text();
  const described: { field: string; filename: string; type: string; size: number } = first;
  return { fields, size: bytes.length + text.length, described, stream: first.stream() };
}

export const handle = streamed(async (context, body) => {
  const hash = createHash('sha256');
  for await (const chunk of body) hash.update(chunk as Buffer);
  return { sha: hash.digest('hex'), path: context.path };
});

const raw = async (input: BodyStream) => {
  input.pause();
  return 'ok';
};
const named: NamedFunction = Object.assign(raw, { streamBody: true });

export const module: Function = { handle, routes: { 'POST /upload': upload, 'POST /raw': streamed(() => 'ok') }, functions: { named } };
