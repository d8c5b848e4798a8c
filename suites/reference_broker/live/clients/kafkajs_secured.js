// kafkajs over TLS and/or SASL for the secured-listener test. One argument, a JSON object:
// {bootstrap, topic, count, group, ssl: {ca, cert, key} | null, sasl: {mechanism, username, password} | null}.
// Produces COUNT values with acks=-1, reads them back with a consumer group, and prints one JSON line:
// {"acked": N, "read": [values...]} or {"error": "...", "type": "..."} when connecting fails.
const fs = require("fs");
const { Kafka, logLevel } = require("kafkajs");

const spec = JSON.parse(process.argv[2]);
const ssl = spec.ssl
  ? {
      ca: [fs.readFileSync(spec.ssl.ca, "utf-8")],
      cert: spec.ssl.cert ? fs.readFileSync(spec.ssl.cert, "utf-8") : undefined,
      key: spec.ssl.key ? fs.readFileSync(spec.ssl.key, "utf-8") : undefined,
    }
  : false;
const kafka = new Kafka({
  clientId: "kconform-secured",
  brokers: [spec.bootstrap],
  ssl,
  sasl: spec.sasl || undefined,
  logLevel: logLevel.NOTHING,
  retry: { retries: 2, initialRetryTime: 200 },
});

async function main() {
  const producer = kafka.producer();
  await producer.connect();
  let acked = 0;
  for (let i = 0; i < spec.count; i++) {
    await producer.send({ topic: spec.topic, acks: -1, messages: [{ value: `v-${i}` }] });
    acked += 1;
  }
  await producer.disconnect();
  const consumer = kafka.consumer({ groupId: spec.group });
  await consumer.connect();
  await consumer.subscribe({ topic: spec.topic, fromBeginning: true });
  const read = [];
  await new Promise(async (resolve) => {
    const timer = setTimeout(resolve, 30000);
    await consumer.run({
      eachMessage: async ({ message }) => {
        read.push(message.value.toString());
        if (read.length >= spec.count) {
          clearTimeout(timer);
          resolve();
        }
      },
    });
  });
  await consumer.disconnect();
  console.log(JSON.stringify({ acked, read }));
}

main().catch((err) => {
  console.log(JSON.stringify({ error: err.message, type: err.type || err.name }));
  process.exit(0);
});
