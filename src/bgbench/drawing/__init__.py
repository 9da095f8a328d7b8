"""Drawing: matplotlib figures, thumbnails and galleries of images, and reading a dataset's files for them.

Below the measures, so that each measure draws its own report section; knows nothing of the page.
"""
