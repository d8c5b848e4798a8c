// A kafkajs producer and consumer group for the cluster failover test: "produce BOOTSTRAP TOPIC COUNT"
// prints "acked VALUE" for every record the cluster acknowledged (acks=-1, idempotent, retried through
// leader changes); "consume BOOTSTRAP TOPIC GROUP WANT" prints "read VALUE" until WANT distinct values
// are read or 60 s pass.
const { Kafka, logLevel } = require("kafkajs");

const [mode, bootstrap, topic, third, fourth] = process.argv.slice(2);
const kafka = new Kafka({
  clientId: "kconform-failover",
  brokers: bootstrap.split(","),
  logLevel: logLevel.ERROR,
  retry: { retries: 30, initialRetryTime: 200, maxRetryTime: 2000 },
});

async function produce(count) {
  const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
  await producer.connect();
  for (let i = 0; i < count; i++) {
    const value = "record-" + String(i).padStart(5, "0");
    try {
      await producer.send({ topic, acks: -1, messages: [{ value }] });
      console.log("acked", value);
    } catch (err) {
      console.error("failed", value, err.message);
    }
    await new Promise((r) => setTimeout(r, 5));
  }
  await producer.disconnect();
}

async function consume(group, want) {
  const consumer = kafka.consumer({ groupId: group });
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  const seen = new Set();
  await new Promise(async (resolve) => {
    const timer = setTimeout(resolve, 60000);
    await consumer.run({
      eachMessage: async ({ message }) => {
        const value = message.value.toString();
        console.log("read", value);
        seen.add(value);
        if (seen.size >= want) {
          clearTimeout(timer);
          resolve();
        }
      },
    });
  });
  await consumer.disconnect();
}

(mode === "produce" ? produce(Number(third)) : consume(third, Number(fourth)))
  .then(() => process.exit(0))
  .catch((err) => {
    console.error(err);
    process.exit(2);
  });
