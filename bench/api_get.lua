-- SPDX-License-Identifier: Apache-2.0
-- wrk script: authenticated GET of one object. Needs env GPUAAS_TOKEN.
wrk.headers["Authorization"] = "Bearer " .. os.getenv("GPUAAS_TOKEN")
