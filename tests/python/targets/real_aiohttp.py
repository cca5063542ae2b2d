"""Launcher of test_real_programs.py: Debian's aiohttp, a server under load
from an aiohttp client, both in this process's event loop (main thread).

    python3 real_aiohttp.py SECONDS

The server listens on 127.0.0.1 (a free port, nothing else is contacted).
CLIENTS client tasks, in a TaskGroup, send requests one after another;
the handlers await real things: the request body, asyncio.sleep, a
streamed response written chunk by chunk, a fan-out of sub-requests back
to the server (gathered), pure-Python work between awaits.  After the
first responses of every kind the launcher writes "ready PORT" and a
newline on stdout (the handshake); it ends after SECONDS or MAX_REQUESTS
requests, whichever comes first.
"""
import asyncio
import json
import random
import socket
import sys
import time

from aiohttp import ClientSession, ClientTimeout, TCPConnector, web

CLIENTS = 24
MAX_REQUESTS = 2_000_000
KINDS = ("echo", "slow", "stream", "fanout", "compute")


async def echo(request):
    body = await request.read()
    return web.Response(body=body[::-1])


async def slow(request):
    await asyncio.sleep(random.random() * 0.004)
    return web.json_response({"slept": True, "path": request.path})


async def stream(request):
    response = web.StreamResponse()
    response.content_type = "text/plain"
    await response.prepare(request)
    for i in range(int(request.query.get("n", "8"))):
        await response.write(b"chunk %d\n" % i * 64)
        await asyncio.sleep(0)
    await response.write_eof()
    return response


async def fanout(request):
    session = request.app["session"]
    port = request.app["port"]

    async def one(i):
        async with session.get("http://127.0.0.1:%d/slow?i=%d" % (port, i)) as r:
            return (await r.json())["slept"]

    results = await asyncio.gather(*(one(i) for i in range(3)))
    return web.json_response({"fanout": results})


def shape(n):
    return {"items": [{"id": i, "name": "item-%d" % i, "tags": ["t%d" % (i % 7)] * 3}
                      for i in range(n)]}


async def compute(request):
    data = await request.json()
    out = json.dumps(shape(int(data["n"])), sort_keys=True)
    await asyncio.sleep(0)
    return web.Response(text=out)


async def client(session, port, seen, stop):
    url = "http://127.0.0.1:%d/" % port
    while not stop.is_set():
        kind = random.choice(KINDS)
        if kind == "echo":
            async with session.post(url + "echo", data=b"x" * random.randint(1, 9000)) as r:
                await r.read()
        elif kind == "stream":
            async with session.get(url + "stream", params={"n": random.randint(1, 16)}) as r:
                async for _ in r.content.iter_chunked(512):
                    pass
        elif kind == "compute":
            async with session.post(url + "compute", json={"n": random.randint(1, 200)}) as r:
                await r.text()
        else:
            async with session.get(url + kind) as r:
                await r.read()
        seen[kind] = seen.get(kind, 0) + 1
        seen["total"] = seen.get("total", 0) + 1


async def main(seconds):
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    app = web.Application()
    app.add_routes([web.post("/echo", echo), web.get("/slow", slow),
                    web.get("/stream", stream), web.get("/fanout", fanout),
                    web.post("/compute", compute)])
    app["port"] = port
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.SockSite(runner, sock).start()
    deadline = time.monotonic() + seconds
    seen, stop = {}, asyncio.Event()
    async with ClientSession(connector=TCPConnector(limit=CLIENTS * 2),
                             timeout=ClientTimeout(total=60)) as session, \
            ClientSession(connector=TCPConnector(limit=16)) as inner:
        app["session"] = inner

        async def watch():
            ready = False
            while time.monotonic() < deadline and seen.get("total", 0) < MAX_REQUESTS:
                if not ready and all(seen.get(k) for k in KINDS):
                    sys.stdout.write("ready %d\n" % port)
                    sys.stdout.flush()
                    ready = True
                await asyncio.sleep(0.01)
            stop.set()

        async with asyncio.TaskGroup() as tg:
            tg.create_task(watch(), name="watch")
            for i in range(CLIENTS):
                tg.create_task(client(session, port, seen, stop), name="client-%d" % i)
    await runner.cleanup()


if __name__ == "__main__":
    asyncio.run(main(float(sys.argv[1]) if len(sys.argv) > 1 else 240.0))
