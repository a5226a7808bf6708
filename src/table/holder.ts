// Holds the live table. Build once, freeze, swap one reference: a request
// reads `current` once and keeps that table for its whole life.
import type { RouteTable } from "./types.ts";
import { buildTable } from "./build.ts";

export class TableHolder {
  #current: RouteTable;
  #generation = 0;

  constructor(initial: RouteTable = buildTable([], null)) {
    this.#current = initial;
  }

  get current(): RouteTable {
    return this.#current;
  }

  /** Incremented on every swap; 0 until the first compiled table is installed. */
  get generation(): number {
    return this.#generation;
  }

  /** Install a new table; returns its generation. */
  swap(table: RouteTable): number {
    this.#current = table;
    return ++this.#generation;
  }
}
