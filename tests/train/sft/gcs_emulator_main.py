"""Runs gcp-storage-emulator with the generation headers GCS sends.

  python gcs_emulator_main.py -d DATA start --port P --default-bucket B -q

GCS returns `x-goog-generation` / `x-goog-metageneration` on every object
download; tensorstore (orbax's array writer) reads them to make conditional
writes (OCDBT's manifest updates) and fails with "Malformed
StorageGeneration" without them. The emulator (2026.7.19) omits them, so
this launcher adds them to its download handler and starts it unchanged
otherwise.
"""

import importlib
import sys

from gcp_storage_emulator import exceptions
from gcp_storage_emulator.handlers import objects


def _install() -> None:
  download = objects.download

  def download_with_generation(request, response, storage, *args, **kwargs):
    download(request, response, storage, *args, **kwargs)
    try:
      obj = storage.get_file_obj(
          request.params['bucket_name'], request.params['object_id']
      )
    except exceptions.NotFound:
      return
    response['x-goog-generation'] = str(obj['generation'])
    response['x-goog-metageneration'] = str(obj.get('metageneration', '1'))

  objects.download = download_with_generation


if __name__ == '__main__':
  _install()
  # The emulator's CLI module, imported only after the handler is patched.
  emulator = importlib.import_module('gcp_storage_emulator.__main__')

  sys.exit(emulator.main())
