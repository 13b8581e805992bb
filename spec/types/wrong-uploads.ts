// Mistakes with uploaded files and streamed bodies that the exported types must refuse. Every
// line marked `error TSnnnn` must fail to compile with that code, and no other line may fail: the
// correct forms are in uploads.ts.
import { streamed } from 'funcrun';
import type { Context } from 'funcrun';

export function handle(context: Context) {
  const file = context.files[0];
  file.size = 0; // error TS2540
  context.files.push(file); // error TS2339
  return file.path; // error TS2339
}

export const parsed = streamed((context, body: string) => body); // error TS2345
export const text = streamed((context, body) => body.toUpperCase()); // error TS2339
