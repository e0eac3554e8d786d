/** A stored Response: JSON text as the route wrote it, owned by one account. */
export interface StoredResponseRecord {
  id: string;
  accountId: string;
  /** Epoch ms. */
  createdAt: number;
  /** The `response` object, JSON. */
  response: string;
  /** The conversation's input items (a JSON array). */
  inputItems: string;
}

export interface StoredResponseRepository {
  put(record: StoredResponseRecord): Promise<void>;
  /** The account's response by id, when it exists and was created at or after `notBefore` (epoch ms). */
  get(accountId: string, id: string, notBefore: number): Promise<StoredResponseRecord | null>;
  /** Removes the account's response; false when it had none by that id. */
  delete(accountId: string, id: string): Promise<boolean>;
  /** Retention: deletes at most `limit` responses created before `cutoff` (epoch ms); returns how many. */
  deleteRecordedBefore(cutoff: number, limit: number): Promise<number>;
}
