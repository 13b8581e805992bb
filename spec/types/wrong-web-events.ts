// Mistakes with the CloudEvents helpers of fetch handlers that the exported types must refuse.
// Every line marked `error TSnnnn` must fail to compile with that code, and no other line may
// fail: the correct forms are in web-events.ts.
import { eventResponse, readEvent, readEvents } from 'funcrun';

export async function wrong(request: Request): Promise<void> {
  await readEvent('http://example.com/'); // error TS2345
  await readEvents({ headers: {} }); // error TS2740
  const event = await readEvent(request);
  const data: string = event.data; // error TS2322
  const many: string[] = await readEvents(request); // error TS2322
  eventResponse({ source: '/s' }); // error TS2345
  eventResponse({ type: 't', source: '/s' }, { mode: 'batch' }); // error TS2322
  eventResponse({ type: 't', source: '/s' }, { status: '202' }); // error TS2322
  const text: string = eventResponse(event); // error TS2322
  void data;
  void many;
  void text;
}
