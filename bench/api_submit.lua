-- SPDX-License-Identifier: Apache-2.0
-- wrk script: POST /v1/workloads with a unique idempotency key per request.
-- Needs env GPUAAS_TOKEN, GPUAAS_PROJECT, GPUAAS_FLAVOR, GPUAAS_DURATION.
local counter = 0
local next_tid = 1

function setup(thread)
  thread:set("tid", next_tid)
  next_tid = next_tid + 1
end

function init(args)
  prefix = "t" .. tostring(tid) .. "-" .. tostring(os.time())
end

request = function()
  counter = counter + 1
  local body = string.format(
    '{"project_id":%s,"flavor_id":%s,"duration_s":%s,"idempotency_key":"%s-%d"}',
    os.getenv("GPUAAS_PROJECT"), os.getenv("GPUAAS_FLAVOR"), os.getenv("GPUAAS_DURATION"),
    prefix, counter)
  return wrk.format("POST", "/v1/workloads", {
    ["Authorization"] = "Bearer " .. os.getenv("GPUAAS_TOKEN"),
    ["Content-Type"] = "application/json",
  }, body)
end

done = function(summary, latency, requests)
  io.write(string.format("completed=%d errors_status=%d\n", summary.requests, summary.errors.status))
end
