// Dates and times in the PROJECT's time zone (GET /v1/projects/{p} -> time_zone), never the
// browser's, always with the zone named: "2026-03-09 14:30 (Asia/Shanghai)".
import { t } from "./i18n.js";

const formatters = new Map();

function formatter(timeZone, withTime) {
  const key = `${timeZone}|${withTime}`;
  if (!formatters.has(key)) {
    const options = { timeZone, year: "numeric", month: "2-digit", day: "2-digit" };
    if (withTime) Object.assign(options, { hour: "2-digit", minute: "2-digit", hourCycle: "h23" });
    formatters.set(key, new Intl.DateTimeFormat("en-CA", options));
  }
  return formatters.get(key);
}

function parts(date, timeZone, withTime) {
  const out = {};
  for (const part of formatter(timeZone, withTime).formatToParts(date)) out[part.type] = part.value;
  return out;
}

/** "2026-03-09 14:30" of an ISO-8601 instant in timeZone (no zone name); "" for no value. */
export function localDateTime(iso, timeZone) {
  if (!iso) return "";
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return String(iso);
  const p = parts(date, timeZone, true);
  return `${p.year}-${p.month}-${p.day} ${p.hour}:${p.minute}`;
}

/** "2026-03-09 14:30 (Asia/Shanghai)": an instant in the project's zone, the zone named. */
export function zoned(iso, timeZone) {
  if (!iso) return "";
  return t("time.zoned", { time: localDateTime(iso, timeZone), zone: timeZone });
}

/** "2026-03-09" of an instant in timeZone. */
export function localDate(iso, timeZone) {
  if (!iso) return "";
  const p = parts(new Date(iso), timeZone, false);
  return `${p.year}-${p.month}-${p.day}`;
}

/** A local wall-clock time the API already gives in a zone ("2026-12-08T10:00"), zone named. */
export function wallClock(local, timeZone) {
  if (!local) return "";
  return t("time.zoned", { time: String(local).replace("T", " ").slice(0, 16), zone: timeZone });
}

/** The Monday and Sunday (YYYY-MM-DD) of an ISO week "2026-W09". */
export function isoWeekRange(isoWeek) {
  const match = /^(\d{4})-W(\d{2})$/.exec(isoWeek || "");
  if (!match) return null;
  const [year, week] = [Number(match[1]), Number(match[2])];
  const jan4 = new Date(Date.UTC(year, 0, 4));
  const monday = new Date(jan4);
  monday.setUTCDate(jan4.getUTCDate() - ((jan4.getUTCDay() + 6) % 7) + (week - 1) * 7);
  const sunday = new Date(monday);
  sunday.setUTCDate(monday.getUTCDate() + 6);
  const day = (d) => d.toISOString().slice(0, 10);
  return { from: day(monday), to: day(sunday) };
}

/** A number with the language's digit grouping. */
export function number(value, lang) {
  return new Intl.NumberFormat(lang === "zh" ? "zh-CN" : "en").format(value ?? 0);
}
