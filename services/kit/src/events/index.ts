export { COMBINED_PREFIX, EventRecorder, newEvent, objectRef, type EventRecorderOptions, type EventType } from "./recorder.js";
