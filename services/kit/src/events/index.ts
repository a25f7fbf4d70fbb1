export { EventRecorder, newEvent, objectRef, type EventType } from "./recorder.js";
