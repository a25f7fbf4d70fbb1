import { MemoryStore } from "./memory-store.js";
import { describeStorageContract } from "./storage-contract.js";

describeStorageContract("MemoryStore", () => {
  const storage = new MemoryStore();
  return Promise.resolve({ storage, changeRecords: () => Promise.resolve(storage.changes.length), stop: () => Promise.resolve() });
});
