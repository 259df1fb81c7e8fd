// The recorded streams under tests/fixtures/streams, by file name, for the stream machines' tests:
// support/fixtures.ts reads them and support/prices.ts prices them; this file only names the folder.

import * as fixtures from "../support/fixtures.ts";

const inStreams = (name: string): string => `streams/${name}`;

export const fixtureText = (name: string) => fixtures.fixtureText(inStreams(name));
export const sseEvents = (name: string) => fixtures.fixtureEvents(inStreams(name));
export const chatItems = (name: string) => fixtures.chatItems(inStreams(name));
export const messagesEvents = (name: string) => fixtures.messagesEvents(inStreams(name));
export { costOf } from "../support/prices.ts";
