/**
 * What a channel declares about itself (each channel folder's channel.ts): its settings under
 * `notify.<id>` (their schema, and how they are resolved: secrets, checks across keys), how its
 * notifiers are made from them, and whether it carries the nightly summary. notifiers/index.ts
 * lists the channels; the config's `notify` section and `summary.channels` are built from the list.
 */
import type { z } from 'zod';
import type { Secret } from '../util/secret.js';
import type { Notifier } from './types.js';

/** What a channel's settings are resolved with (config/load.ts): secrets from one place, problems named by key. */
export interface SettingsContext {
  /**
   * A secret from exactly one place: the settings (`direct`), a file (`file`, `<key>_file`), or
   * the environment variable `envName`. `key` is its path under the channel (`smtp.pass`);
   * `required` makes a problem of none being set.
   */
  secret(key: string, direct: string | undefined, file: string | undefined, envName: string, required: boolean): Secret | undefined;
  /** A problem with a key under the channel (`smtp.user`; '' for the channel itself). */
  problem(key: string, message: string): void;
}

/** What every channel is made with, besides its own settings. */
export interface ChannelCommon {
  /** notify.timeout: how long one send may take. */
  timeoutMs: number;
  /** http.external_url: where the page is reached (links to a run). */
  externalUrl?: string;
}

export interface ChannelSpec<Id extends string = string, S extends z.ZodType = z.ZodType, R = unknown> {
  /** Its key under `notify`, and its name in `summary.channels`. */
  readonly id: Id;
  readonly schema: S;
  /** The settings as the notifiers take them; undefined when a problem was reported. */
  settings(raw: z.output<S>, ctx: SettingsContext): R | undefined;
  /** Its notifiers (Alertmanager: one per peer). */
  create(settings: R, common: ChannelCommon): Notifier[];
  /** Whether it can carry the nightly summary (summary.channels). */
  readonly summary: boolean;
}

/** A channel's declaration, its id kept as a literal type (so `notify.<id>` is typed). */
export function defineChannel<const Id extends string, S extends z.ZodType, R>(spec: ChannelSpec<Id, S, R>): ChannelSpec<Id, S, R> {
  return spec;
}
