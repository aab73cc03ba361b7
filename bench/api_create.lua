-- SPDX-License-Identifier: Apache-2.0
-- wrk script: POST /v1/projects with a unique name per request.
-- Needs env GPUAAS_TOKEN and GPUAAS_ORG (organization id).
local counter = 0
local next_tid = 1

function setup(thread)
  thread:set("tid", next_tid)
  next_tid = next_tid + 1
end

function init(args)
  prefix = "b" .. tostring(tid) .. "x" .. tostring(os.time())
end

request = function()
  counter = counter + 1
  local body = string.format('{"org_id":%s,"name":"%s-%d"}', os.getenv("GPUAAS_ORG"), prefix, counter)
  return wrk.format("POST", "/v1/projects", {
    ["Authorization"] = "Bearer " .. os.getenv("GPUAAS_TOKEN"),
    ["Content-Type"] = "application/json",
  }, body)
end
