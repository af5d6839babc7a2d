/** Every notifier has this shape: a reader who knows one knows them all. */
import type { Channel, SendResult } from '../alerting/types.js';
import type { Summary } from '../summary/build.js';
import type { SummaryChannel } from '../summary/send.js';

/** A channel for alerts (alerting's Channel) that may also carry the nightly summary. */
export interface Notifier extends Channel, SummaryChannel {
  sendSummary?(s: Summary): Promise<SendResult>;
}
